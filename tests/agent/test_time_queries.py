"""The diary suite (benchmarks/_diary.py): questions naming relative times are answered
better with the time phrase used than without, through every path that uses it — the
boost recall and memory_search apply, on the reference and the SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks._diary import NOW, SCOPE, diary

from recallstore._time_query import time_boosted_search
from recallstore._when import TimeWindow
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemoryHit, MemorySearchQuery
from recallstore.store import MemoryStore

LIMIT = 10


async def _recall_at_10(store: MemoryStore, *, boosted: bool) -> float:
    notes, questions = diary()
    written = await store.write(notes)
    index_of = {record.id: index for index, record in enumerate(written)}

    async def search(text: str, window: TimeWindow, limit: int) -> list[MemoryHit]:
        query = MemorySearchQuery(
            query=text,
            scope=SCOPE,
            limit=limit,
            observed_after=window.start,
            observed_before=window.end,
        )
        return await store.search(query)

    total = 0.0
    for question in questions:
        if boosted:
            hits, found = await time_boosted_search(search, question.text, LIMIT, NOW)
            assert found is not None
            assert found.phrase == question.phrase
        else:
            hits = await search(question.text, TimeWindow(None, None), LIMIT)
        found_notes = {index_of[hit.record.id] for hit in hits}
        total += len(found_notes & question.evidence) / len(question.evidence)
    return total / len(questions)


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_the_windowed_search_beats_the_plain_one_on_the_diary(
    backend: str, tmp_path: Path
) -> None:
    def make() -> MemoryStore:
        if backend == "memory":
            return InMemoryMemoryStore()
        return SqliteMemoryStore(tmp_path / f"{len(list(tmp_path.iterdir()))}.db")

    async with make() as plain_store:
        plain = await _recall_at_10(plain_store, boosted=False)
    async with make() as boosted_store:
        boosted = await _recall_at_10(boosted_store, boosted=True)
    # Measured 0.487 plain and 0.860 boosted (0.926 when the window came first, before the
    # boost was bounded; docs/benchmarks.md); the margin is wide.
    assert boosted >= plain + 0.3, (plain, boosted)
    assert boosted > 0.85, boosted


def test_the_diary_asks_about_every_phrase_and_topic() -> None:
    notes, questions = diary()
    assert len(notes) > 150
    assert len({question.phrase for question in questions}) == 8
    assert all(question.evidence for question in questions)
