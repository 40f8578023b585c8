"""SQLite keyword search's candidate step: FTS5's best, read record by record, holds
exactly the records the full join of every match picks, in the same order."""

import asyncio
import random
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore._search.query import plan_query
from recallstore.backends.sqlite import SqliteMemoryStore, ranked
from recallstore.backends.sqlite.ranked import _best_joined_now, _best_now
from recallstore.backends.sqlite.scope_split import ScopeSplit
from recallstore.backends.sqlite.search import match_expression
from recallstore.store import new_record_id, record_from_input

WORDS = ["apple", "pear", "plum", "fig", "kiwi", "lime"]


def both(db: Path, query: MemorySearchQuery, n: int) -> tuple[list[str], list[str]]:
    """(the fast step's record ids, the full join's), each sorted."""
    text = query.query or ""
    expression = match_expression(dict(query.scope), plan_query(text), text)
    now = datetime.now(UTC)
    conn = sqlite3.connect(db)
    split = ScopeSplit(dict(query.scope), ())
    try:
        fast = _best_now(conn, query, now, expression, n, split)
        joined = _best_joined_now(conn, query, now, expression, n, split)
    finally:
        conn.close()
    assert [row[3] for row in fast] == [row[3] for row in joined][: len(fast)]
    return sorted(str(row[3]) for row in fast), sorted(str(row[3]) for row in joined)


async def test_equal_scores_at_the_cut_go_to_the_last_written_as_in_the_full_join(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    rng = random.Random(7)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    async with SqliteMemoryStore(db) as store:
        # Few words, equal lengths: most scores tie. Creation times are shuffled against
        # the write order: the cut follows the write order, as the full join does.
        records = [
            record_from_input(
                MemoryWriteInput(
                    scope={"user": f"u{index % 3}"}, content=" ".join(rng.choices(WORDS, k=4))
                ),
                record_id=new_record_id(),
                now=start + timedelta(minutes=rng.randrange(10_000)),
            )
            for index in range(300)
        ]
        rng.shuffle(records)
        await store.import_records(records)
        hits = await store.search(MemorySearchQuery(query="apple kiwi", limit=40))
        for hit in hits[:25]:
            await store.invalidate(hit.record.id, "test")
    for text in ("apple", "apple kiwi", "fig lime plum", "pear"):
        for n in (1, 5, 37, 100, 400):
            fast, joined = both(db, MemorySearchQuery(query=text, limit=10), n)
            assert fast == joined, (text, n)
            fast, joined = both(
                db, MemorySearchQuery(query=text, limit=10, include_invalidated=True), n
            )
            assert fast == joined, (text, n)


async def test_of_identical_records_the_last_written_are_the_candidates(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        written = await store.write(
            [MemoryWriteInput(scope={"user": "u"}, content="same words") for _ in range(30)]
        )
    query = MemorySearchQuery(query="words", limit=10)
    fast, joined = both(db, query, 7)
    assert fast == joined == sorted(record.id for record in written[-7:])


async def test_a_query_with_no_match_and_a_query_of_only_invalidated_matches(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        await store.write([MemoryWriteInput(scope={"user": "u"}, content="gone word")])
        hits = await store.search(MemorySearchQuery(query="gone"))
        await store.invalidate(hits[0].record.id, "test")
        assert await store.search(MemorySearchQuery(query="gone")) == []
    assert both(db, MemorySearchQuery(query="gone"), 10) == ([], [])
    assert both(db, MemorySearchQuery(query="absent"), 10) == ([], [])


async def test_filters_dropping_more_than_the_room_ask_the_full_join(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "memory.db"
    rng = random.Random(11)
    vocabulary = [f"w{index}" for index in range(30)]
    start = datetime(2024, 1, 1, tzinfo=UTC)
    async with SqliteMemoryStore(db) as store:
        records = [
            record_from_input(
                MemoryWriteInput(
                    scope={}, content=" ".join(rng.choices(vocabulary, k=rng.randint(1, 12)))
                ),
                record_id=new_record_id(),
                now=start + timedelta(minutes=rng.randrange(10_000)),
            )
            for _ in range(500)
        ]
        await store.import_records(records)
        # The best matches of "w1" invalidated: more than the room beyond n = 10.
        best = await store.search(MemorySearchQuery(query="w1", limit=40))
        for hit in best:
            await store.invalidate(hit.record.id, "test")
        for record in rng.sample(records, 60):
            if record.id not in {hit.record.id for hit in best}:
                await store.invalidate(record.id, "test")
    joined_calls: list[int] = []
    original = ranked._best_joined_now

    def counted(*args: object, **kwargs: object) -> object:
        joined_calls.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ranked, "_best_joined_now", counted)
    asked = 0
    for text in ("w1", "w2 w3", "w4 w5 w6 w7", "w0 w9 w19 w29"):
        for n in (1, 5, 37, 100, 600):
            for invalid in (False, True):
                query = MemorySearchQuery(query=text, limit=10, include_invalidated=invalid)
                fast, joined = both(db, query, n)
                assert fast == joined, (text, n, invalid)
                asked += 1
    assert 0 < len(joined_calls) < asked / 2  # FTS5 alone answered most of them
    before = len(joined_calls)
    both(db, MemorySearchQuery(query="w1", limit=10), 10)
    assert len(joined_calls) == before + 1  # its 40 best are invalidated


async def test_a_record_replaced_at_its_seq_mid_search_is_never_returned_in_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "memory.db"
    ana = {"user": "ana"}
    async with SqliteMemoryStore(db) as store:
        written = await store.write(
            [MemoryWriteInput(scope=ana, content=f"Ana keeps bees, hive {n}") for n in range(5)]
        )
        newest = written[-1]

        async def other_process() -> None:
            # Deletes ana's newest record; bob's new record takes its seq (max + 1).
            async with SqliteMemoryStore(db) as other:
                await other.delete(newest.id)
                await other.write(
                    [MemoryWriteInput(scope={"user": "bob"}, content="Bob keeps bees")]
                )

        original = ranked._candidates_now
        raced: list[bool] = []

        def racing(*args: Any, **kwargs: Any) -> Any:
            found = original(*args, **kwargs)
            if not raced:  # once, between ranking ana's records and reading their rows
                raced.append(True)
                worker = threading.Thread(target=asyncio.run, args=(other_process(),))
                worker.start()
                worker.join(timeout=30)
                assert not worker.is_alive()
            return found

        monkeypatch.setattr(ranked, "_candidates_now", racing)
        hits = await store.search(MemorySearchQuery(query="bees", scope=ana))
        assert raced
        # The search saw the file as it was when it began: ana's five records, no one else's.
        assert sorted(hit.record.id for hit in hits) == sorted(record.id for record in written)
        assert all(hit.record.scope == ana for hit in hits)
        monkeypatch.undo()
        after = await store.search(MemorySearchQuery(query="bees", scope=ana))
        assert newest.id not in {hit.record.id for hit in after}
        assert len(after) == 4
