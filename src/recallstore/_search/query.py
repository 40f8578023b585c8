"""Backend-independent query processing for keyword search.

Every keyword backend turns query text into the same weighted terms here, so the
SQLite, in-memory and Postgres stores search for the same words with the same weights:

1. :func:`plan_query` — the query's words (see ``text.query_terms``), English stop
   words dropped unless the query has nothing else, one term per stem.
2. :func:`expand_query` — pseudo-relevance feedback (RM3-style): words of the best
   first-pass hits, weighted by how much of those hits they make up and by how rare
   they are in the store, added at a fixed share of the query's weight.
3. :func:`bm25_score` — weighted BM25 (k1 :data:`BM25_K1`, b :data:`BM25_B`, Lucene's
   idf) over :func:`document_stems`, with store-wide statistics.

:func:`rank_records` runs the three over a backend's two callbacks (find candidates,
count documents), so each backend supplies only its index look-ups. The figures
behind every constant are in docs/benchmarks.md ("Ranking techniques tried").

A :class:`QueryTerm` carries both the word as typed (what FTS5, which stems by
itself, is asked for) and its Porter stem (what the in-memory and Postgres backends
index and look up). Everything here is deterministic: equal weights are ordered by
the stem, never by set or dict iteration order.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, TypeVar

from recallstore._search.porter import porter_stem
from recallstore._search.text import query_terms, tokenize

_Item = TypeVar("_Item")
_PARSED_CACHE = 10_000  # records whose stem counts are kept between queries (~15 MB)

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against ain all am an and any are aren as at be because
    been before being below between both but by can couldn d did didn do does doesn
    doing don down during each few for from further had hadn has hasn have haven having
    he her here hers herself him himself his how i if in into is isn it its itself just
    ll m ma me mightn more most mustn my myself needn no nor not now o of off on once
    only or other our ours ourselves out over own re s same shan she should shouldn so
    some such t than that the their theirs them themselves then there these they this
    those through to too under until up ve very was wasn we were weren what when where
    which while who whom why will with won wouldn y you your yours yourself yourselves
    """.split()  # noqa: SIM905 - a word list reads better as text
)
"""English stop words (the common NLTK list, split at apostrophes as our tokens are).

Dropped from a query that has other words; a query made only of them keeps them all,
so "who is it" still finds the records that contain those words."""

BM25_K1 = 0.9
"""Term-frequency saturation (Anserini's default; FTS5's bm25() is fixed at 1.2)."""
BM25_B = 0.3
"""Length normalisation. Lower than the usual 0.75 because memories are short
statements of similar length: normalising by length mostly punishes the more
informative ones. See docs/benchmarks.md for the measured sensitivity."""
RERANK_CANDIDATES = 100
"""How many of an index's own best matches a backend that cannot score with BM25_K1
and BM25_B itself (SQLite FTS5, Postgres) re-scores with :func:`bm25_score`."""
EXHAUSTIVE_SCOPE = 1_000
"""A search within a scope of at most this many records re-scores every record of the
scope holding a query word (as the in-memory backend always does); a broader or
unscoped search re-scores the index's own best :data:`RERANK_CANDIDATES`. Every
backend applies the same threshold, so they rank alike."""
FEEDBACK_DOCUMENTS = 5
"""How many first-pass hits pseudo-relevance feedback reads."""
FEEDBACK_TERMS = 8
"""How many words feedback adds to a query at most."""
FEEDBACK_SHARE = 0.3
"""The expansion's share of the final query weight (RM3's 1 - lambda)."""


@dataclass(frozen=True, slots=True)
class QueryTerm:
    """One term of a processed query: the word as typed, its stem, and its weight."""

    word: str
    stem: str
    weight: float = 1.0


def content_words(text: str) -> list[str]:
    """The distinct words of ``text`` without stop words, or all of them when every
    word is a stop word; first-seen order."""
    words = query_terms(text)
    kept = [word for word in words if word not in STOP_WORDS]
    return kept or words


def plan_query(text: str) -> tuple[QueryTerm, ...]:
    """The weighted terms to search ``text`` for: content words, one per stem, weight 1.

    Words sharing a stem ("walk", "walking") are one term, kept under the first word
    seen, so a query cannot count the same stem twice. Empty when ``text`` has no words.
    """
    terms: dict[str, QueryTerm] = {}
    for word in content_words(text):
        stem = porter_stem(word)
        terms.setdefault(stem, QueryTerm(word, stem))
    return tuple(terms.values())


def expand_query(
    query: Sequence[QueryTerm],
    feedback: Sequence[str],
    document_frequency: Mapping[str, int],
    total_documents: int,
    *,
    terms: int = FEEDBACK_TERMS,
    share: float = FEEDBACK_SHARE,
) -> tuple[QueryTerm, ...]:
    """``query`` re-weighted and extended by pseudo-relevance feedback (RM3-style).

    ``feedback`` holds the contents of the best first-pass hits, best first (use
    :data:`FEEDBACK_DOCUMENTS` of them). Each non-stop word of those hits scores its
    share of each hit's words, weighted by the hit's rank (1/rank) and by the word's
    idf; the ``terms`` best are normalised to sum to ``share``, and the original terms
    to ``1 - share``. ``document_frequency`` maps stems (at least those of
    :func:`feedback_stems`) to how many stored records contain them; a missing stem
    counts as 1. Ties are broken by stem, so the result never depends on set order.
    """
    if not query or not feedback or terms <= 0 or share <= 0:
        return tuple(query)
    relevance: dict[str, float] = defaultdict(float)
    surface: dict[str, str] = {}
    for rank, content in enumerate(feedback, start=1):
        words = _feedback_words(content)
        if not words:
            continue
        each = 1 / (len(words) * rank)
        for word, stem in words:
            surface.setdefault(stem, word)
            relevance[stem] += each
    original = {term.stem for term in query}
    scored = []
    for stem, mass in relevance.items():
        if stem in original:
            continue
        rarity = idf(document_frequency.get(stem, 1), total_documents)
        scored.append((-mass * rarity, stem))
    chosen = sorted(scored)[:terms]
    expansion_total = sum(-weight for weight, _ in chosen)
    query_total = sum(term.weight for term in query)
    if expansion_total <= 0 or query_total <= 0:
        return tuple(query)
    kept = [
        QueryTerm(term.word, term.stem, term.weight * (1 - share) / query_total) for term in query
    ]
    added = [
        QueryTerm(surface[stem], stem, -weight * share / expansion_total) for weight, stem in chosen
    ]
    return (*kept, *added)


def idf(document_frequency: int, total_documents: int) -> float:
    """Lucene's always-positive idf, so a word in most records still counts a little
    (FTS5's own idf is ~0 for words in over half the records, which made a query of
    only common words rank at random)."""
    frequency = max(document_frequency, 1)
    return math.log(1 + (total_documents - frequency + 0.5) / (frequency + 0.5))


@dataclass(frozen=True, slots=True)
class CorpusStatistics:
    """What BM25 needs to know about the whole store: its record count, their mean
    length in tokens, and how many records contain each stem of the query."""

    total_documents: int
    average_length: float
    document_frequency: Mapping[str, int]


def document_stems(content: str) -> list[str]:
    """The stems of ``content`` in order: what every backend indexes for a record."""
    return [porter_stem(word) for word in tokenize(content)]


def bm25_score(
    query: Sequence[QueryTerm],
    stems: Sequence[str],
    statistics: CorpusStatistics,
    *,
    k1: float = BM25_K1,
    b: float = BM25_B,
) -> float:
    """The weighted BM25 score of one record (its :func:`document_stems`); 0.0 when it
    contains no query term. Each term's contribution is multiplied by its weight."""
    return _bm25(query, Counter(stems), len(stems), statistics, k1, b)


def _bm25(
    query: Sequence[QueryTerm],
    counts: Mapping[str, int],
    length: int,
    statistics: CorpusStatistics,
    k1: float = BM25_K1,
    b: float = BM25_B,
) -> float:
    return _Bm25(query, statistics, k1, b).score(counts, length)


class _Bm25:
    """Weighted BM25 with each term's idf worked out once, for scoring many records."""

    def __init__(
        self,
        query: Sequence[QueryTerm],
        statistics: CorpusStatistics,
        k1: float = BM25_K1,
        b: float = BM25_B,
    ) -> None:
        frequency, documents = statistics.document_frequency, statistics.total_documents
        self._terms = [
            (term.stem, term.weight * idf(frequency.get(term.stem, 1), documents) * (k1 + 1))
            for term in query
        ]
        self._k1, self._b = k1, b
        self._average = statistics.average_length or 1.0

    def score(self, counts: Mapping[str, int], length: int) -> float:
        if not length:
            return 0.0
        norm = self._k1 * (1 - self._b + self._b * length / self._average)
        score = 0.0
        get = counts.get
        for stem, weight in self._terms:
            frequency = get(stem, 0)
            if frequency:
                score += weight * frequency / (frequency + norm)
        return score


def feedback_stems(feedback: Sequence[str]) -> list[str]:
    """The stems :func:`expand_query` may add from ``feedback``, sorted: look up their
    document frequencies before calling it."""
    return sorted({stem for content in feedback for _, stem in _feedback_words(content)})


@lru_cache(maxsize=_PARSED_CACHE)
def _feedback_words(content: str) -> tuple[tuple[str, str], ...]:
    """The (word, stem) of each word of ``content`` that is no stop word, in order:
    what feedback reads of a hit; cached, as the best hits come back query after query."""
    return tuple((word, porter_stem(word)) for word in tokenize(content) if word not in STOP_WORDS)


@dataclass(frozen=True, slots=True)
class Candidate(Generic[_Item]):
    """A record a backend's index matched: the backend's own object, the content to
    score, and its recency key (``(created_at, id)``; equal scores rank newer first)."""

    item: _Item
    content: str
    recency: tuple[str, str]


Fetch = Callable[[Sequence[QueryTerm], int], Awaitable[Sequence[Candidate[_Item]]]]
"""Backend callback: the records matching any of the terms and the query's filters.
Within a scope of at most :data:`EXHAUSTIVE_SCOPE` records, every one; otherwise the
index's own best ``n`` (SQLite: ``ORDER BY bm25()``; Postgres: idf-weighted matched
terms). The in-memory backend always returns every match."""
Statistics = Callable[[Sequence[str]], Awaitable[CorpusStatistics]]
"""Backend callback: the store-wide :class:`CorpusStatistics` for the given stems."""


FetchNow = Callable[[Sequence[QueryTerm], int], Sequence[Candidate[_Item]]]
""":data:`Fetch` for :func:`rank_records_now`: answers at once."""
StatisticsNow = Callable[[Sequence[str]], CorpusStatistics]
""":data:`Statistics` for :func:`rank_records_now`: answers at once."""


@dataclass(frozen=True, slots=True)
class _FetchRequest:
    terms: tuple[QueryTerm, ...]
    n: int


@dataclass(frozen=True, slots=True)
class _StatisticsRequest:
    stems: list[str]


# The ranking as a generator that yields its look-ups and receives their answers, so the
# async and the synchronous driver below run the very same steps.
_Ranking = Generator[_FetchRequest | _StatisticsRequest, Any, list[tuple[float, _Item]]]


async def rank_records(
    text: str,
    fetch: Fetch[_Item],
    statistics: Statistics,
    limit: int,
    *,
    candidates: int = RERANK_CANDIDATES,
    feedback: int = FEEDBACK_DOCUMENTS,
) -> list[tuple[float, _Item]]:
    """The ``limit`` best records for ``text`` as (score, item), best first.

    The one ranking every keyword backend shares: :func:`plan_query`, one fetch of
    the records holding its words, scored with :func:`bm25_score`, then
    pseudo-relevance feedback from the ``feedback`` best (:func:`expand_query`; 0 turns
    it off) and the same records scored again with the expanded query. Feedback words
    change the order, never the membership: a keyword search returns only records
    holding a word of ``text`` itself (S10), so they are never fetched for.
    """
    steps: _Ranking[_Item] = _ranking(text, limit, candidates, feedback)
    answer: Any = None
    try:
        while True:
            request = steps.send(answer)
            if isinstance(request, _FetchRequest):
                answer = await fetch(request.terms, request.n)
            else:
                answer = await statistics(request.stems)
    except StopIteration as done:
        result: list[tuple[float, _Item]] = done.value
        return result


def rank_records_now(
    text: str,
    fetch: FetchNow[_Item],
    statistics: StatisticsNow,
    limit: int,
    *,
    candidates: int = RERANK_CANDIDATES,
    feedback: int = FEEDBACK_DOCUMENTS,
) -> list[tuple[float, _Item]]:
    """:func:`rank_records` with callbacks that answer at once: a backend whose look-ups
    run on one thread (SQLite's) ranks there, in a single hand-off to it."""
    steps: _Ranking[_Item] = _ranking(text, limit, candidates, feedback)
    answer: Any = None
    try:
        while True:
            request = steps.send(answer)
            if isinstance(request, _FetchRequest):
                answer = fetch(request.terms, request.n)
            else:
                answer = statistics(request.stems)
    except StopIteration as done:
        result: list[tuple[float, _Item]] = done.value
        return result


def _ranking(text: str, limit: int, candidates: int, feedback: int) -> _Ranking[_Item]:
    query = plan_query(text)
    if not query or limit <= 0:
        return []
    fetched: Sequence[Candidate[_Item]] = yield _FetchRequest(query, max(candidates, limit))
    if not fetched:
        return []
    # Newest first, so the stable sort by score ranks equal scores newer first; each
    # record's stems are counted once for both passes.
    found = [
        (candidate, *_stem_counts(candidate.content))
        for candidate in sorted(fetched, key=_recency, reverse=True)
    ]
    known: CorpusStatistics = yield _StatisticsRequest([term.stem for term in query])
    if feedback > 0:
        first = _score(query, found, known)
        contents = [candidate.content for _, candidate in first[:feedback]]
        more: CorpusStatistics = yield _StatisticsRequest(feedback_stems(contents))
        query = expand_query(query, contents, more.document_frequency, more.total_documents)
        # Every expanded term is a query or feedback stem, so the two lookups cover it
        # (a backend may answer both from one growing cache: then nothing to merge).
        if more.document_frequency is not known.document_frequency:
            known = CorpusStatistics(
                known.total_documents,
                known.average_length,
                {**more.document_frequency, **known.document_frequency},
            )
    ranked = _score(query, found, known)
    return [(score, candidate.item) for score, candidate in ranked[:limit]]


@lru_cache(maxsize=_PARSED_CACHE)
def _stem_counts(content: str) -> tuple[dict[str, int], int]:
    """The stem counts and length of ``content`` (its :func:`document_stems`, counted);
    cached, as the same records come back query after query (callers must not change
    the dict). Counted in a plain dict: ``Counter`` cost as much as the stemming."""
    words = tokenize(content)
    counts: dict[str, int] = {}
    get = counts.get
    for stem in map(porter_stem, words):
        counts[stem] = get(stem, 0) + 1
    return counts, len(words)


def _recency(candidate: Candidate[Any]) -> tuple[str, str]:
    return candidate.recency


def _score(
    query: Sequence[QueryTerm],
    found: Sequence[tuple[Candidate[_Item], dict[str, int], int]],
    statistics: CorpusStatistics,
) -> list[tuple[float, Candidate[_Item]]]:
    """The candidates holding a query term, best first; ``found`` is newest first and
    sorted() is stable, so equal scores keep that order."""
    score = _Bm25(query, statistics).score
    scored = [(score(counts, length), candidate) for candidate, counts, length in found]
    return sorted([pair for pair in scored if pair[0] > 0], key=lambda pair: -pair[0])
