"""The relevance floor on a real SQLite store, keyword-only and hybrid (issue 37).

What the recall block and the ``memory_search`` tool keep of a search's hits: the best
hit always, the next two whatever they score (in a small store scores say little),
then only hits scoring at least ``RELATIVE_FLOOR`` of the best. The store's own
``search`` keeps every match (the kit's S10/S11). ``benchmarks/recall_floor.py``
measures the signals tried for a stricter floor (docs/benchmarks.md).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from recallstore import MemoryCapability, MemorySearchQuery, MemoryWriteInput
from recallstore._search.floor import ALWAYS_KEPT
from recallstore.backends.sqlite import SqliteMemoryStore

SCOPE = {"user": "ana"}
FRIDAY = datetime(2026, 12, 4, 12, tzinfo=UTC)
PASSPORT = "Ana's passport number ends in 42 and her passport expires in May."
LUNCHES = tuple(f"Ana had lunch with colleague number {n} on a Monday." for n in range(8))
UNRELATED = (
    "The quarterly report is due to the finance team.",
    "Bob repaints the garden shed every spring.",
)

EMBEDDERS = [
    pytest.param(None, id="keyword"),
    pytest.param(
        "default",
        id="hybrid",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("onnxruntime") is None,
            reason="the default embedder needs the semantic extra",
        ),
    ),
]


@dataclass(frozen=True)
class Case:
    """Memories, a first message, and what the block must and must not hold."""

    name: str
    memories: tuple[str, ...]
    asked: str
    first: str | None
    """The block's first entry (None: no block at all)."""
    kept_at_most: int
    absent: tuple[str, ...] = ()


CASES = [
    Case(
        "one strong match among weak one-word matches",
        (PASSPORT, *LUNCHES),
        "When does my passport expire, Monday?",
        PASSPORT,
        ALWAYS_KEPT,
    ),
    Case(
        "a lone weak match is still the best hit and kept",
        (LUNCHES[0], *UNRELATED),
        "Who did I meet on Monday?",
        LUNCHES[0],
        ALWAYS_KEPT,
    ),
    Case(
        "equally strong matches are all kept",
        (PASSPORT, "Ana renewed her passport; the new passport expires in 2031.", *LUNCHES[:2]),
        "when does the passport expire",
        None,
        4,
    ),
]


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
async def test_the_floor_keeps_relevant_hits_and_drops_the_weak_tail(
    tmp_path: Path, embedder: str | None, case: Case
) -> None:
    # A fixed Friday: "on Monday" then names a day before every record (asked on a
    # Monday it would name the day they were saved, and the time read first).
    async with SqliteMemoryStore(
        tmp_path / "floor.db", embedder=embedder, clock=lambda: FRIDAY
    ) as store:
        await store.write([MemoryWriteInput(scope=SCOPE, content=text) for text in case.memories])
        capability = MemoryCapability(store, scope_fields=["user"])
        memory = await capability.instantiate(
            SCOPE, conversation_id="c1", first_user_text=case.asked
        )
        shown = [record.content for record in memory.recall.entries]
        found = await memory.toolbox.call("memory_search", {"query": case.asked})
        listed = [hit["content"] for hit in found["memories"]]
        everything = await store.search(MemorySearchQuery(query=case.asked, scope=SCOPE))
    assert 1 <= len(shown) <= case.kept_at_most
    assert len(listed) == len(shown)
    if case.first is not None:
        assert shown[0] == case.first
        assert case.first in listed
    assert not set(case.absent) & set(shown)
    # The store's own search keeps its whole list (S10/S11); only the floor trims it.
    assert len(everything) >= len(shown)


async def test_equal_keyword_matches_are_not_cut(tmp_path: Path) -> None:
    """Keyword hits that match as well as the best one are never below the floor. (Not
    so with an embedder: fused scores are z-scores over the candidates, so in a store
    of six equal matches the ones below their average fall under the fraction and only
    the best three are kept; docs/benchmarks.md, issue 37.)"""
    memories = [f"Ana's passport copy number {n} is in drawer {n}." for n in range(6)]
    async with SqliteMemoryStore(tmp_path / "equal.db") as store:
        await store.write([MemoryWriteInput(scope=SCOPE, content=text) for text in memories])
        capability = MemoryCapability(store, scope_fields=["user"])
        memory = await capability.instantiate(
            SCOPE, conversation_id="c1", first_user_text="where is a passport copy"
        )
    assert sorted(record.content for record in memory.recall.entries) == sorted(memories)


@pytest.mark.parametrize("embedder", EMBEDDERS)
async def test_a_lone_keyword_match_leads_the_recall(tmp_path: Path, embedder: str | None) -> None:
    """Only one memory holds the word "home". Before, a hybrid store gave that lone
    keyword match the z-score 0 on that side (what a record matching no word gets) and
    ranked the nurse's shifts first by meaning alone; a keyword list of equal scores now
    credits each as its best (``recallstore._search.fusion``)."""
    memories = [
        "The user's name is Ana.",
        "Prefers short, direct answers.",
        "Ana is vegetarian.",
        "Ana's home city is Lisbon; she moved there from Berlin.",
        "Ana's daughter Maya loves swimming lessons.",
        "Ana works as a nurse on night shifts.",
    ]
    async with SqliteMemoryStore(tmp_path / "lone.db", embedder=embedder) as store:
        await store.write([MemoryWriteInput(scope=SCOPE, content=text) for text in memories])
        capability = MemoryCapability(store, scope_fields=["user"])
        memory = await capability.instantiate(
            SCOPE, conversation_id="c1", first_user_text="book a table near my home"
        )
        hits = await store.search(MemorySearchQuery(query="book a table near my home", scope=SCOPE))
    assert memory.recall.entries[0].content == memories[3]
    assert hits[0].record.content == memories[3]


async def test_a_keyword_store_recalls_nothing_that_shares_no_word(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "none.db") as store:
        await store.write([MemoryWriteInput(scope=SCOPE, content=text) for text in UNRELATED])
        capability = MemoryCapability(store, scope_fields=["user"])
        memory = await capability.instantiate(
            SCOPE, conversation_id="c1", first_user_text="where does she live"
        )
        found = await memory.toolbox.call("memory_search", {"query": "where does she live"})
    assert memory.recall.entries == ()
    assert memory.recall_block is None
    assert found["memories"] == []
