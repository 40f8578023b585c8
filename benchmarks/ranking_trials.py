"""Ranking techniques tried for keyword search, measured one change at a time.

Reads the LoCoMo dev split (default /work/shared/data/locomo-dev.json; ``--data``),
with the same memories and questions as ``locomo_recall.py``: one memory per dialogue
turn, scope = the conversation, every question of categories 1-4 (multi-hop, temporal,
open-domain, single-hop) with evidence asked with limit 10. Recall@10 = the share of a
question's evidence turns among its 10 hits, averaged over questions.

Three kinds of figure:

* **store** — ``SqliteMemoryStore.search`` (which now runs the proposed ranking), plain
  FTS5 (the store's own file and tokenizer, ``ORDER BY bm25()``) with stop words
  dropped, and the proposed ranking (``recallstore._search.query.rank_records``) both over the
  store's file (FTS5 candidates, as the SQLite backend would run it) and over every
  match (as the in-memory backend would);
* **trials** — a Python BM25 ranker over the same Porter stems as FTS5 (one shared
  statistic over every conversation, as a store has), so that k1, b, idf, term
  weights, feedback and proximity can be varied freely. Each row changes one thing
  against the row it names. Stems come from ``recallstore._search.porter``, which a test
  pins to FTS5's own tokenizer;
* **held-out** — every parameter with a choice (stop list, k1/b, idf, feedback size
  and share, proximity weight) is chosen on one half of the conversations (sample
  ids in even positions) and measured on the other half, and the other way round:
  the gain on a half the choice never saw tells whether it fits LoCoMo or helps
  generally.

Nothing looks at speaker names, dates or turn ids; the stop list is the common NLTK
English list, not one tuned here.

    .venv/bin/python benchmarks/ranking_trials.py [--data PATH]

Prints "skipped" and exits 0 when the data file is absent. About a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import sqlite3
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from _fts5 import fts5_totals
from locomo_recall import DEFAULT_DATA, Question, load_locomo

from recallstore._search.porter import porter_stem
from recallstore._search.query import (
    STOP_WORDS,
    Candidate,
    CorpusStatistics,
    QueryTerm,
    expand_query,
    plan_query,
    rank_records,
)
from recallstore._search.text import query_terms, tokenize
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery

CATEGORIES = {1, 2, 3, 4}
LIMIT = 10

LUCENE_STOP_WORDS = frozenset(
    """
    a an and are as at be but by for if in into is it no not of on or such that the
    their then there these they this to was will with
    """.split()  # noqa: SIM905 - a word list reads better as text
)
"""Lucene's (and Elasticsearch's) default English stop set, the short alternative."""


@dataclass(frozen=True)
class Config:
    """One ranking configuration; each field is one technique's knob."""

    stop_words: frozenset[str] = STOP_WORDS
    stem: bool = True
    fallback: bool = True  # a query of only stop words keeps them
    dedup: str = "stem"  # "stem" | "word" | "none" (repeated words counted again)
    k1: float = 1.2
    b: float = 0.75
    idf: str = "fts5"  # "fts5" | "lucene" | "log"
    feedback_documents: int = 0
    feedback_terms: int = 8
    feedback_share: float = 0.3
    proximity: float = 0.0
    candidates: int = 0  # re-rank only FTS5's top N by its own bm25() (0: every match)
    feedback_needs_query_word: bool = False  # feedback adds no record lacking a query word


BASE = Config()
FTS5_BM25 = BASE
PROPOSED = Config(
    k1=0.9,
    b=0.3,
    idf="lucene",
    feedback_documents=5,
    candidates=100,
    feedback_needs_query_word=True,
)
"""What _query.rank_records does."""
"""FTS5's own bm25(): k1 1.2, b 0.75, its idf, every term weight 1."""


@dataclass
class Memory:
    sample: str
    dia_id: str
    terms: list[str]
    counts: Counter[str]
    content: str


class Corpus:
    """Stems (or plain words) of every memory, with one global bm25 statistic."""

    def __init__(self, memories: list[tuple[str, str, str]], stem: bool) -> None:
        self.stem = stem
        self.memories: list[Memory] = []
        self.postings: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.df: Counter[str] = Counter()
        for sample, dia_id, content in memories:
            terms = [self.normalise(word) for word in tokenize(content)]
            counts = Counter(terms)
            index = len(self.memories)
            self.memories.append(Memory(sample, dia_id, terms, counts, content))
            for term in counts:
                self.postings[(sample, term)].append(index)
                self.df[term] += 1
        self.total = len(self.memories)
        self.average_length = sum(len(m.terms) for m in self.memories) / self.total

    def normalise(self, word: str) -> str:
        return porter_stem(word) if self.stem else word

    def idf(self, term: str, kind: str) -> float:
        n, df = self.total, max(self.df.get(term, 0), 1)
        if kind == "fts5":  # FTS5's bm25(): log((N - n + .5) / (n + .5)), at least 1e-6
            return max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
        if kind == "lucene":
            return math.log(1 + (n - df + 0.5) / (df + 0.5))
        return math.log(n / df)


def query_plan(text: str, corpus: Corpus, config: Config) -> list[QueryTerm]:
    """The weighted terms for ``text`` under ``config`` (the module's plan by default)."""
    module = config.stop_words is STOP_WORDS and config.stem and config.dedup == "stem"
    if module and config.fallback:
        return list(plan_query(text))
    words = tokenize(text) if config.dedup == "none" else query_terms(text)
    kept = [w for w in words if w not in config.stop_words]
    if config.fallback:
        kept = kept or words
    terms: dict[str, QueryTerm] = {}
    plan: list[QueryTerm] = []
    for word in kept:
        key = corpus.normalise(word)
        if config.dedup == "stem":
            terms.setdefault(key, QueryTerm(word, key))
        else:
            plan.append(QueryTerm(word, key))
    return list(terms.values()) if config.dedup == "stem" else plan


def bm25_rank(
    corpus: Corpus, sample: str, plan: Sequence[QueryTerm], config: Config
) -> list[tuple[float, int]]:
    """(score, memory) of every memory of ``sample`` matching a term, best first;
    equal scores keep the newer memory first, as the stores do."""
    scores: dict[int, float] = defaultdict(float)
    k1, b = config.k1, config.b
    for term in plan:
        idf = corpus.idf(term.stem, config.idf)
        for index in corpus.postings.get((sample, term.stem), ()):
            memory = corpus.memories[index]
            tf = memory.counts[term.stem]
            norm = k1 * (1 - b + b * len(memory.terms) / corpus.average_length)
            scores[index] += term.weight * idf * tf * (k1 + 1) / (tf + norm)
    if config.proximity:
        for index in scores:
            scores[index] += config.proximity * _proximity(corpus, index, plan, config)
    return sorted(((s, i) for i, s in scores.items()), key=lambda p: (-p[0], -p[1]))


def _proximity(corpus: Corpus, index: int, plan: Sequence[QueryTerm], config: Config) -> float:
    """Sum over pairs of distinct query terms of min(idf) / distance^2 at their closest."""
    terms = corpus.memories[index].terms
    positions: dict[str, list[int]] = defaultdict(list)
    wanted = {t.stem for t in plan}
    for position, term in enumerate(terms):
        if term in wanted:
            positions[term].append(position)
    bonus = 0.0
    for left, right in itertools.combinations(sorted(positions), 2):
        distance = min(abs(a - b) for a in positions[left] for b in positions[right])
        weight = min(corpus.idf(left, config.idf), corpus.idf(right, config.idf))
        bonus += weight / distance**2
    return bonus


def rank(
    corpus: Corpus, sample: str, plan: Sequence[QueryTerm], config: Config
) -> list[tuple[float, int]]:
    """bm25_rank, over FTS5's own top ``config.candidates`` when that is set (what a
    store re-ranking an FTS5 result in Python sees)."""
    ranked = bm25_rank(corpus, sample, plan, config)
    if not config.candidates:
        return ranked
    fts5 = bm25_rank(corpus, sample, [replace(t, weight=1.0) for t in plan], FTS5_BM25)
    allowed = {index for _, index in fts5[: config.candidates]}
    return [pair for pair in ranked if pair[1] in allowed]


def search(corpus: Corpus, question: Question, config: Config) -> list[str]:
    plan = query_plan(question.text, corpus, config)
    ranked = rank(corpus, question.sample, plan, config)
    if config.feedback_documents and ranked:
        first_plan = list(plan)
        feedback = [corpus.memories[i].content for _, i in ranked[: config.feedback_documents]]
        plan = list(
            expand_query(
                plan,
                feedback,
                corpus.df,
                corpus.total,
                terms=config.feedback_terms,
                share=config.feedback_share,
            )
        )
        ranked = rank(corpus, question.sample, plan, config)
        if config.feedback_needs_query_word:
            # S10: a keyword search returns only records holding a word of the query.
            original = {term.stem for term in first_plan}
            ranked = [pair for pair in ranked if original & corpus.memories[pair[1]].counts.keys()]
    return [corpus.memories[i].dia_id for _, i in ranked[:LIMIT]]


def recall(found: Iterable[str], question: Question) -> float:
    return len(set(found) & question.evidence) / len(question.evidence)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


class Bench:
    """The corpus twice (stemmed, plain) and the questions, split into halves."""

    def __init__(self, data: Path) -> None:
        inputs, questions, _ = load_locomo(data)
        rows = [
            (i.scope["sample"], str(i.payload["dia_id"]), i.content)  # type: ignore[index]
            for i in inputs
        ]
        self.inputs = inputs
        self.corpora = {True: Corpus(rows, stem=True), False: Corpus(rows, stem=False)}
        self.questions = [q for q in questions if q.category in CATEGORIES]
        samples = list(dict.fromkeys(q.sample for q in self.questions))
        self.halves = (set(samples[0::2]), set(samples[1::2]))
        self._cache: dict[Config, dict[int, float]] = {}

    def per_question(self, config: Config) -> dict[int, float]:
        if config not in self._cache:
            corpus = self.corpora[config.stem]
            self._cache[config] = {
                n: recall(search(corpus, q, config), q) for n, q in enumerate(self.questions)
            }
        return self._cache[config]

    def score(self, config: Config, half: set[str] | None = None) -> float:
        values = self.per_question(config)
        return mean(
            [v for n, v in values.items() if half is None or self.questions[n].sample in half]
        )


@dataclass
class Trial:
    """A technique: its name, the configuration it is compared against, and either
    one configuration or a grid to choose from (on each half, for the held-out check)."""

    name: str
    against: Config
    grid: list[Config]
    note: str = ""


def held_out_gain(bench: Bench, trial: Trial) -> tuple[float, Config, Config]:
    """Mean over both directions of (chosen-on-one-half minus baseline) on the other half,
    and the configurations each direction chose."""
    gains, chosen = [], []
    for tune, test in (bench.halves, bench.halves[::-1]):
        best = max(trial.grid, key=lambda c: (bench.score(c, tune), -trial.grid.index(c)))
        chosen.append(best)
        gains.append(bench.score(best, test) - bench.score(trial.against, test))
    return mean(gains), chosen[0], chosen[1]


def trials() -> list[Trial]:
    """Kept changes first, each against the row before it; then the rejected ones."""
    every_word = replace(BASE, stop_words=frozenset())
    lucene_idf = replace(BASE, idf="lucene")
    anserini = replace(lucene_idf, k1=0.9, b=0.4)
    k1_b_grid = [
        replace(lucene_idf, k1=k1, b=b)
        for k1 in (0.6, 0.9, 1.2, 1.5, 2.0)
        for b in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 0.9)
    ]
    tuned = replace(lucene_idf, k1=0.9, b=0.3)
    feedback = replace(tuned, feedback_documents=5)
    feedback_grid = [
        replace(tuned, feedback_documents=d, feedback_terms=t, feedback_share=share)
        for d in (3, 5, 10)
        for t in (4, 8, 16)
        for share in (0.2, 0.3, 0.4, 0.5)
    ]
    return [
        Trial("stop words dropped (NLTK English list)", every_word, [BASE]),
        Trial(
            "a query of only stop words keeps them (instead of matching nothing)",
            replace(BASE, fallback=False),
            [BASE],
        ),
        Trial("idf: Lucene's log(1 + (N-n+.5)/(n+.5)) instead of FTS5's", BASE, [lucene_idf]),
        Trial(
            "bm25 k1 0.9, b 0.4 (Anserini's defaults) instead of 1.2/0.75", lucene_idf, [anserini]
        ),
        Trial("bm25 k1/b chosen from a 5x8 grid (b 0-0.9)", lucene_idf, k1_b_grid),
        Trial("bm25 k1 0.9, b 0.3 (kept)", lucene_idf, [tuned]),
        Trial("pseudo-relevance feedback (RM3): 5 hits, 8 words, share 0.3", tuned, [feedback]),
        Trial("feedback hits/words/share chosen from a 3x3x4 grid", tuned, feedback_grid),
        Trial(
            "re-rank only FTS5's own top 100 (what the SQLite store can afford)",
            feedback,
            [replace(feedback, candidates=100)],
        ),
        Trial(
            "feedback re-orders but adds no record lacking a query word (S10)",
            replace(feedback, candidates=100),
            [PROPOSED],
        ),
        Trial("everything above, against today's store", every_word, [PROPOSED]),
        Trial(
            "rejected: stop list of Lucene's 33 words",
            BASE,
            [replace(BASE, stop_words=LUCENE_STOP_WORDS)],
        ),
        Trial("rejected: no stemming (unicode61 words)", BASE, [replace(BASE, stem=False)]),
        Trial("rejected: repeated query words count again", BASE, [replace(BASE, dedup="none")]),
        Trial("rejected: de-duplicate by word, not stem", BASE, [replace(BASE, dedup="word")]),
        Trial("rejected: idf plain log(N/n)", BASE, [replace(BASE, idf="log")]),
        Trial("rejected: bm25 b 0 (no length normalisation)", tuned, [replace(tuned, b=0.0)]),
        Trial(
            "rejected: proximity bonus, min idf / distance^2 per term pair, x0.1",
            feedback,
            [replace(feedback, proximity=0.1)],
        ),
        Trial(
            "rejected: proximity weight chosen from 0-1",
            feedback,
            [replace(feedback, proximity=w) for w in (0.0, 0.01, 0.03, 0.1, 0.3, 1.0)],
        ),
    ]


async def store_figures(bench: Bench) -> dict[str, tuple[float, float]]:
    """(recall, ms per query) through ``SqliteMemoryStore.search``, plain FTS5 bm25() on
    the same file (every word / stop words dropped), and the proposed ranking on it."""
    questions = bench.questions
    with tempfile.TemporaryDirectory(prefix="recallstore-ranking-") as tmp:
        path = Path(tmp) / "store.db"
        async with SqliteMemoryStore(path) as store:
            for offset in range(0, len(bench.inputs), 500):
                await store.write(bench.inputs[offset : offset + 500])
            through_store, started = [], time.perf_counter()
            for q in questions:
                hits = await store.search(
                    MemorySearchQuery(query=q.text, scope={"sample": q.sample}, limit=LIMIT)
                )
                found = [h.record.payload["dia_id"] for h in hits]  # type: ignore[index]
                through_store.append(recall(found, q))
            elapsed = 1000 * (time.perf_counter() - started) / len(questions)
        return {
            "SqliteMemoryStore.search (now _query.rank_records itself)": (
                mean(through_store),
                elapsed,
            ),
            "plain FTS5 on the store's file, every word OR-ed": fts5_recall(
                path, questions, query_terms
            ),
            "plain FTS5 on the store's file, stop words dropped": fts5_recall(
                path, questions, lambda text: [t.word for t in plan_query(text)]
            ),
            "proposed: _query.rank_records over the store's file": await asyncio.to_thread(
                prototype_recall, path, questions
            ),
        }


def prototype_recall(path: Path, questions: list[Question]) -> tuple[float, float]:
    """Recall of the proposed SQLite ranking on the store's own file: FTS5 finds the
    candidates (``ORDER BY bm25() LIMIT 100`` within the scope), ``_query.rank_records``
    re-scores them; document frequencies from an fts5vocab table, the record count and
    mean length from the index's averages record."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE VIRTUAL TABLE temp.memory_vocab USING fts5vocab(main, memory_fts, row)")
    sql = (
        "SELECT r.content, r.created_at, r.id, json_extract(r.payload, '$.dia_id') "
        "FROM memory_fts JOIN memory_records AS r ON r.seq = memory_fts.rowid "
        "WHERE memory_fts MATCH ? AND EXISTS (SELECT 1 FROM memory_scope s "
        "WHERE s.record_seq = r.seq AND s.key = 'sample' AND s.value = ?) "
        "ORDER BY bm25(memory_fts, 1.0, 0.0), r.created_at DESC, r.id DESC LIMIT ?"
    )

    async def one(question: Question) -> list[str]:
        async def fetch(terms: Sequence[QueryTerm], n: int) -> list[Candidate[str]]:
            words = " OR ".join('"' + t.word.replace('"', '""') + '"' for t in terms)
            expression = f"content : ({words})"
            rows = conn.execute(sql, (expression, question.sample, n)).fetchall()
            return [Candidate(row[3], row[0], (row[1], row[2])) for row in rows]

        async def statistics(stems: Sequence[str]) -> CorpusStatistics:
            rows, (tokens, *_) = fts5_totals(conn, "memory_fts")
            marks = ", ".join("?" * len(stems))
            frequency = dict(
                conn.execute(
                    f"SELECT term, doc FROM temp.memory_vocab WHERE term IN ({marks})", stems
                )
            )
            return CorpusStatistics(rows, tokens / max(rows, 1), frequency)

        ranked = await rank_records(question.text, fetch, statistics, LIMIT)
        return [item for _, item in ranked]

    async def every() -> list[float]:
        return [recall(await one(q), q) for q in questions]

    started = time.perf_counter()
    values = asyncio.run(every())
    elapsed = time.perf_counter() - started
    conn.close()
    return mean(values), 1000 * elapsed / len(questions)


def memory_recall(bench: Bench) -> tuple[float, float]:
    """Recall of ``_query.rank_records`` the in-memory backend's way: every record of the
    scope holding a query stem is a candidate, statistics from Python counts."""
    corpus = bench.corpora[True]

    async def one(question: Question) -> list[str]:
        async def fetch(terms: Sequence[QueryTerm], n: int) -> list[Candidate[str]]:
            found = sorted(
                {i for t in terms for i in corpus.postings.get((question.sample, t.stem), ())}
            )
            return [
                Candidate(corpus.memories[i].dia_id, corpus.memories[i].content, (f"{i:09d}", ""))
                for i in found
            ]

        async def statistics(stems: Sequence[str]) -> CorpusStatistics:
            frequency = {stem: corpus.df[stem] for stem in stems if stem in corpus.df}
            return CorpusStatistics(corpus.total, corpus.average_length, frequency)

        ranked = await rank_records(
            question.text, fetch, statistics, LIMIT, candidates=corpus.total
        )
        return [item for _, item in ranked]

    async def every() -> list[float]:
        return [recall(await one(q), q) for q in bench.questions]

    started = time.perf_counter()
    values = asyncio.run(every())
    return mean(values), 1000 * (time.perf_counter() - started) / len(bench.questions)


def fts5_recall(
    path: Path, questions: list[Question], words: Callable[[str], list[str]]
) -> tuple[float, float]:
    """Recall of plain FTS5 on the store's own table: MATCH the quoted words OR-ed,
    within the conversation, ORDER BY bm25()."""
    conn = sqlite3.connect(path)
    sql = (
        "SELECT json_extract(r.payload, '$.dia_id') FROM memory_fts "
        "JOIN memory_records AS r ON r.seq = memory_fts.rowid "
        "WHERE memory_fts MATCH ? AND EXISTS (SELECT 1 FROM memory_scope s "
        "WHERE s.record_seq = r.seq AND s.key = 'sample' AND s.value = ?) "
        "ORDER BY bm25(memory_fts, 1.0, 0.0), r.created_at DESC, r.id DESC LIMIT ?"
    )
    values, started = [], time.perf_counter()
    for q in questions:
        expression = "content : (" + " OR ".join(f'"{w}"' for w in words(q.text)) + ")"
        rows = conn.execute(sql, (expression, q.sample, LIMIT)).fetchall() if expression else []
        values.append(recall([row[0] for row in rows], q))
    elapsed = time.perf_counter() - started
    conn.close()
    return mean(values), 1000 * elapsed / len(questions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"skipped: LoCoMo data not found at {args.data}")
        return 0
    bench = Bench(args.data)
    print(
        f"LoCoMo {args.data.name}: {len(bench.questions)} questions of categories 1-4, "
        f"halves {sorted(bench.halves[0])} / {sorted(bench.halves[1])}; recall@{LIMIT}"
    )
    print("| ranking | R@10 | ms/query |")
    print("|---|---|---|")
    for name, (value, milliseconds) in asyncio.run(store_figures(bench)).items():
        print(f"| {name} | {value:.3f} | {milliseconds:.2f} |")
    value, milliseconds = memory_recall(bench)
    print(f"| in-memory way: rank_records over every match | {value:.3f} | {milliseconds:.2f} |")
    print(f"| Python BM25 over the same stems, stop words dropped | {bench.score(BASE):.3f} | |")
    print()
    print_sensitivity(bench)
    print(
        "| technique | compared with | dev R@10 | delta dev | delta held-out"
        " | half A / half B | chosen on all / on A / on B |"
    )
    print("|---|---|---|---|---|---|---|")
    for trial in trials():
        best = max(trial.grid, key=lambda c: (bench.score(c), -trial.grid.index(c)))
        gain, first, second = held_out_gain(bench, trial)
        base = bench.score(trial.against)
        halves = " / ".join(
            f"{100 * (bench.score(best, half) - bench.score(trial.against, half)):+.1f}"
            for half in bench.halves
        )
        chosen = ""
        if len(trial.grid) > 1:
            chosen = " / ".join(describe(c, trial.against) for c in (best, first, second))
        print(
            f"| {trial.name} | {base:.3f} | {bench.score(best):.3f} | "
            f"{100 * (bench.score(best) - base):+.1f} | {100 * gain:+.1f} | {halves} | {chosen} |"
        )
    before, after = (
        bench.per_question(replace(BASE, stop_words=frozenset())),
        bench.per_question(PROPOSED),
    )
    better = sum(after[n] > before[n] for n in before)
    worse = sum(after[n] < before[n] for n in before)
    print(
        f"\nproposed vs every word OR-ed, per question: {better} better, {worse} worse, "
        f"{len(before) - better - worse} unchanged"
    )
    return 0


def print_sensitivity(bench: Bench) -> None:
    """Dev R@10 over the k1/b grid (with Lucene idf, no feedback) and over the feedback
    grid (k1 0.9, b 0.3), so the choice can be seen to sit on a plateau."""
    k1s, bs = (0.6, 0.9, 1.2, 1.5, 2.0), (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 0.9)
    print("| k1 / b (Lucene idf, no feedback) | " + " | ".join(str(b) for b in bs) + " |")
    print("|---" * (len(bs) + 1) + "|")
    for k1 in k1s:
        cells = [f"{bench.score(replace(BASE, idf='lucene', k1=k1, b=b)):.3f}" for b in bs]
        print(f"| {k1} | " + " | ".join(cells) + " |")
    print()
    shares = (0.2, 0.3, 0.4, 0.5)
    tuned = replace(BASE, idf="lucene", k1=0.9, b=0.3)
    print("| feedback hits, words / share | " + " | ".join(str(s) for s in shares) + " |")
    print("|---" * (len(shares) + 1) + "|")
    for hits, words in itertools.product((3, 5, 10), (4, 8, 16)):
        grid = [
            replace(tuned, feedback_documents=hits, feedback_terms=words, feedback_share=s)
            for s in shares
        ]
        cells = [f"{bench.score(config):.3f}" for config in grid]
        print(f"| {hits}, {words} | " + " | ".join(cells) + " |")
    print()


def describe(config: Config, against: Config) -> str:
    changed = [
        f"{name} {getattr(config, name)}"
        for name in Config.__dataclass_fields__
        if getattr(config, name) != getattr(against, name)
    ]
    return ", ".join(changed) or "no change"


if __name__ == "__main__":
    sys.exit(main())
