"""Query processing shared by the keyword backends: stop words, stems, feedback, ranking."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence

import pytest

from recallstore._search.query import (
    STOP_WORDS,
    Candidate,
    CorpusStatistics,
    QueryTerm,
    bm25_score,
    content_words,
    document_stems,
    expand_query,
    feedback_stems,
    plan_query,
    rank_records,
)
from recallstore.testing._harness import FILLER_WORDS


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("What did Alice buy in Paris?", ["alice", "buy", "paris"]),
        ("the THE The", ["the"]),  # only stop words: kept, once
        ("who is it", ["who", "is", "it"]),  # only stop words: all kept, in order
        ("Is it?! it is.", ["is", "it"]),
        ("don't you're", ["don", "t", "you", "re"]),  # apostrophe pieces are stop words too
        ("don't panic", ["panic"]),
        ("café CAFÉ cafe", ["cafe"]),
        ("", []),
        ("  ?!  ", []),
        ('"NEAR(" * - ) the', ["near"]),
    ],
)
def test_content_words(text: str, words: list[str]) -> None:
    assert content_words(text) == words


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("walking walked walks", [("walking", "walk")]),  # one term per stem, first word kept
        ("When did she go hiking?", [("go", "go"), ("hiking", "hike")]),
        ("was it", [("was", "wa"), ("it", "it")]),  # stop words stemmed only when kept
        ("", []),
    ],
)
def test_plan_query(text: str, terms: list[tuple[str, str]]) -> None:
    plan = plan_query(text)
    assert [(t.word, t.stem) for t in plan] == terms
    assert all(t.weight == 1.0 for t in plan)


def test_stop_words_are_single_tokens() -> None:
    # A stop word our tokenizer could never produce would silently never match.
    assert all(word.isalnum() and word == word.casefold() for word in STOP_WORDS)


FEEDBACK = [
    "Alice adopted a puppy named Biscuit from the shelter",
    "The puppy Biscuit loves the beach and the shelter staff",
    "Alice bought a leash for Biscuit",
]
FREQUENCY = {"biscuit": 3, "shelter": 2, "puppi": 2, "leash": 1, "beach": 1, "adopt": 1}


def test_expand_query_weights_and_choice() -> None:
    query = plan_query("Where did Alice get her dog?")
    expanded = expand_query(query, FEEDBACK, FREQUENCY, 1000, terms=3, share=0.3)
    original, added = expanded[: len(query)], expanded[len(query) :]
    assert [t.stem for t in original] == [t.stem for t in query]
    assert math.isclose(sum(t.weight for t in original), 0.7)
    assert math.isclose(sum(t.weight for t in added), 0.3)
    assert len(added) == 3
    # Query stems are never added again; stop words never added.
    assert not {t.stem for t in added} & {t.stem for t in query}
    assert not {t.word for t in added} & STOP_WORDS
    # Biscuit is in every feedback hit, so it leads.
    assert added[0].stem == "biscuit"
    assert all(a.weight >= b.weight for a, b in itertools.pairwise(added))


@pytest.mark.parametrize(
    "feedback",
    [
        ["alpha beta gamma delta", "alpha beta gamma delta"],
        ["delta gamma beta alpha", "gamma alpha delta beta"],
    ],
)
def test_expand_query_breaks_ties_by_stem(feedback: list[str]) -> None:
    # Equal mass and equal frequency: the choice must not depend on word order or hashing.
    expanded = expand_query(plan_query("omega"), feedback, {}, 100, terms=2)
    assert [t.stem for t in expanded[1:]] == ["alpha", "beta"]


@pytest.mark.parametrize(
    ("query", "feedback", "terms", "share"),
    [
        ("", FEEDBACK, 8, 0.3),  # no query: nothing to expand
        ("alice", [], 8, 0.3),  # no feedback
        ("alice", FEEDBACK, 0, 0.3),  # feedback off
        ("alice", FEEDBACK, 8, 0.0),
        ("alice", ["the and of", "Alice"], 8, 0.3),  # feedback holds nothing new
    ],
)
def test_expand_query_leaves_query_alone(
    query: str, feedback: list[str], terms: int, share: float
) -> None:
    plan = plan_query(query)
    assert expand_query(plan, feedback, FREQUENCY, 100, terms=terms, share=share) == plan


def test_feedback_stems_lists_what_expansion_may_add() -> None:
    stems = feedback_stems(FEEDBACK)
    assert stems == sorted(set(stems))
    expanded = expand_query(plan_query("dog"), FEEDBACK, FREQUENCY, 100, terms=50)
    assert {t.stem for t in expanded[1:]} <= set(stems)
    assert "the" not in stems
    assert "a" not in stems


STATS = CorpusStatistics(total_documents=100, average_length=5.0, document_frequency={})


@pytest.mark.parametrize(
    ("better", "worse", "query"),
    [
        ("rare common", "common common", "rare common"),  # more query terms
        ("zebra", "horse", "zebra horse"),  # rarer term (horse in 50 records)
        ("zebra zebra", "zebra", "zebra"),  # higher term frequency
        ("zebra stripes", "zebra on the open african savanna", "zebra"),  # shorter record
    ],
)
def test_bm25_score_orders(better: str, worse: str, query: str) -> None:
    # Keyed by stem, as backends report them ("horse" is indexed as "hors").
    stats = CorpusStatistics(100, 5.0, {"hors": 50, "zebra": 2, "rare": 1, "common": 60})
    plan = plan_query(query)
    assert bm25_score(plan, document_stems(better), stats) > bm25_score(
        plan, document_stems(worse), stats
    )


def test_bm25_score_weights_and_no_match() -> None:
    stems = document_stems("zebra")
    plain = bm25_score([QueryTerm("zebra", "zebra")], stems, STATS)
    assert bm25_score([QueryTerm("zebra", "zebra", 0.5)], stems, STATS) == pytest.approx(plain / 2)
    assert bm25_score(plan_query("horse"), stems, STATS) == 0.0
    assert bm25_score(plan_query("zebra"), [], STATS) == 0.0


class _Records:
    """A tiny in-memory corpus with the two callbacks rank_records needs."""

    def __init__(self, contents: Sequence[str]) -> None:
        self.records = {f"r{n}": text for n, text in enumerate(contents)}
        self.stems = {key: document_stems(text) for key, text in self.records.items()}
        self.fetched: list[list[str]] = []

    async def fetch(self, terms: Sequence[QueryTerm], n: int) -> list[Candidate[str]]:
        self.fetched.append([t.stem for t in terms])
        wanted = {t.stem for t in terms}
        return [
            Candidate(key, self.records[key], (f"2026-01-{int(key[1:]) + 1:02d}", key))
            for key in self.records
            if wanted & set(self.stems[key])
        ][:n]

    async def statistics(self, stems: Sequence[str]) -> CorpusStatistics:
        frequency = Counter(s for doc in self.stems.values() for s in set(doc))
        total = sum(len(doc) for doc in self.stems.values())
        return CorpusStatistics(len(self.records), total / len(self.records), frequency)


async def test_rank_records_only_stop_words_still_finds_them() -> None:
    records = _Records(["who is it", "a cat sat", "is it raining"])
    ranked = await rank_records("Who is it?", records.fetch, records.statistics, 10, feedback=0)
    assert [item for _, item in ranked] == ["r0", "r2"]
    assert records.fetched == [["who", "is", "it"]]


async def test_rank_records_stop_words_do_not_match_alone() -> None:
    records = _Records(["what did the dog eat", "the cat likes fish"])
    ranked = await rank_records("What did the cat eat?", records.fetch, records.statistics, 10)
    assert [item for _, item in ranked] == ["r1", "r0"]
    assert records.fetched[0] == ["cat", "eat"]


async def test_rank_records_ties_rank_newer_first_and_respect_limit() -> None:
    records = _Records(["red apple", "red apple", "red apple", "green pear"])
    ranked = await rank_records("apple", records.fetch, records.statistics, 2, feedback=0)
    assert [item for _, item in ranked] == ["r2", "r1"]
    assert await rank_records("apple", records.fetch, records.statistics, 0) == []
    assert await rank_records("?!", records.fetch, records.statistics, 10) == []
    assert records.fetched == [["appl"]]


async def test_rank_records_feedback_reorders_but_never_adds_records() -> None:
    records = _Records(
        [
            "puppy adopted from the shelter",
            "a puppy on the beach with a ball",
            "our puppy, adopted from a shelter in spring, sleeps all day",
            "Biscuit was adopted from the shelter",  # no query word
            *(f"weather note {n}" for n in range(20)),
        ]
    )
    without = await rank_records("puppy", records.fetch, records.statistics, 10, feedback=0)
    assert [item for _, item in without] == ["r0", "r1", "r2"]
    ranked = await rank_records("puppy", records.fetch, records.statistics, 10)
    # The best hit's words (adopted, shelter) lift the record that shares them above
    # the shorter one about a beach; the record without "puppy" stays out (S10).
    assert [item for _, item in ranked] == ["r0", "r2", "r1"]
    # Feedback words are never fetched for: only records holding "puppy" can rank.
    assert records.fetched[-1] == ["puppi"]


def _kit_corpus(*contents: str) -> _Records:
    """The conformance kit's ordering corpora: 20 filler records, then ``contents``."""
    fillers = [
        " ".join(FILLER_WORDS[(n + offset) % len(FILLER_WORDS)] for offset in range(3))
        for n in range(20)
    ]
    return _Records([*fillers, *contents])


@pytest.mark.parametrize("feedback", [0, 5], ids=["plain", "feedback"])
async def test_rank_records_keeps_the_kit_ordering_rules(feedback: int) -> None:
    # S11, rarer term first: "zircon" (1 record) beats "basalt" (3 records).
    records = _kit_corpus(
        "zircon quartz mica", "basalt shale flint", "basalt chalk loam", "basalt slate tuff"
    )
    ranked = await rank_records(
        "zircon basalt", records.fetch, records.statistics, 10, feedback=feedback
    )
    assert ranked[0][1] == "r20"
    assert {item for _, item in ranked} == {"r20", "r21", "r22", "r23"}
    # S11, more matching terms first.
    records = _kit_corpus(
        "zircon basalt gneiss quartz",
        "zircon basalt mica shale",
        "zircon quartz mica shale",
        "basalt quartz mica shale",
    )
    ranked = await rank_records(
        "zircon basalt gneiss", records.fetch, records.statistics, 10, feedback=feedback
    )
    found = [item for _, item in ranked]
    assert found[:2] == ["r20", "r21"]
    assert set(found[2:]) == {"r22", "r23"}
    # S10, equal relevance: newest first.
    records = _kit_corpus("copper kettle", "copper kettle", "copper kettle")
    for text in ("copper", "kettle copper"):
        ranked = await rank_records(text, records.fetch, records.statistics, 10, feedback=feedback)
        assert [item for _, item in ranked] == ["r22", "r21", "r20"]
