"""Group commit: concurrent write calls on one SqliteMemoryStore share one transaction."""

import asyncio
import sqlite3
from collections.abc import Awaitable
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import pytest

from recallstore import (
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    StoreUnavailableError,
)
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.commit import GroupCommit
from recallstore.backends.sqlite.loop_lock import LoopLock


async def count_commits(store: SqliteMemoryStore) -> list[str]:
    """Every transaction-ending statement the store's connection runs from now on."""
    seen: list[str] = []
    assert store._conn is not None
    await store._conn.set_trace_callback(
        lambda sql: seen.append(sql) if sql.split()[0].upper() in {"COMMIT", "ROLLBACK"} else None
    )
    return seen


def note(n: int, writer: str = "w") -> MemoryWriteInput:
    return MemoryWriteInput(scope={"writer": writer}, content=f"note {n} from {writer}")


async def test_concurrent_single_writes_share_one_commit(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        commits = await count_commits(store)
        written = await asyncio.gather(*(store.write([note(n)]) for n in range(64)))
        assert commits == ["COMMIT"]
        # Each caller got its own record, in its own order, and all are in the file.
        assert [batch[0].content for batch in written] == [f"note {n} from w" for n in range(64)]
    async with SqliteMemoryStore(tmp_path / "memory.db") as reopened:
        listed = await reopened.search(MemorySearchQuery(limit=100))
    assert {hit.record.id for hit in listed} == {batch[0].id for batch in written}


async def test_a_groups_plain_writes_keep_their_order_and_journal_rows(tmp_path: Path) -> None:
    # Single-record writes of a group are inserted as one batch (one statement per
    # table): each record still gets the place its call had, and its own journal row.
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        commits = await count_commits(store)
        written = await asyncio.gather(*(store.write([note(n, f"u{n % 3}")]) for n in range(40)))
        assert commits == ["COMMIT"]
        ids = [batch[0].id for batch in written]
        journal = await store.read_journal()
        for n in range(3):
            hits = await store.search(
                MemorySearchQuery(query=f"note {n}", scope={"writer": f"u{n}"})
            )
            assert written[n][0].id in {hit.record.id for hit in hits}
        newest_first = await store.search(MemorySearchQuery(limit=100))
    assert [entry.envelope["data"]["record_ids"] for entry in journal] == [[i] for i in ids]
    assert [hit.record.id for hit in newest_first] == ids[::-1]


@pytest.mark.parametrize("failing_position", [0, 3, 7])
async def test_one_callers_failing_batch_never_fails_anothers(
    tmp_path: Path, failing_position: int
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        (old, taken) = await store.write([note(-1, "seed"), note(-2, "seed")])
        await store.invalidate(taken.id, "already gone")
        stored_old = await store.get(old.id)
        assert stored_old is not None
        changed_old = stored_old.model_copy(update={"content": "a different record, same id"})
        failing: list[Awaitable[object]] = [
            # a supersede of a record that is already invalid: conflict
            store.write([note(100, "bad"), MemoryWriteInput(**fix(taken.id))]),
            # a supersede of a record that does not exist: not found
            store.write([note(101, "bad"), MemoryWriteInput(**fix("no-such-record"))]),
            # an imported record that contradicts the stored one: conflict
            store.import_records([imported("fresh-import"), changed_old]),
        ]
        calls: list[Awaitable[object]] = [store.write([note(n), note(n + 50)]) for n in range(7)]
        calls[failing_position:failing_position] = failing
        commits = await count_commits(store)
        results = await asyncio.gather(*calls, return_exceptions=True)
        errors = results[failing_position : failing_position + len(failing)]
        assert [type(error) for error in errors] == [
            MemoryConflictError,
            MemoryNotFoundError,
            MemoryConflictError,
        ]
        fine = results[:failing_position] + results[failing_position + len(failing) :]
        assert all(isinstance(batch, list) and len(batch) == 2 for batch in fine), results
        # One transaction for everybody (the failing call, when it came first, was
        # alone in its own, rolled back whole).
        assert commits.count("COMMIT") == 1, commits
    async with SqliteMemoryStore(db) as other:
        listed = await other.search(MemorySearchQuery(limit=100, include_invalidated=True))
        contents = sorted(hit.record.content for hit in listed)
        assert await other.get("fresh-import") is None
        still = await other.get(taken.id)
        assert still is not None
        assert still.superseded_by is None
    written = [record for batch in fine if isinstance(batch, list) for record in batch]
    assert contents == sorted(
        [r.content for r in written] + ["note -1 from seed", "note -2 from seed"]
    )


def fix(target: str) -> dict[str, object]:
    return {"scope": {"writer": "bad"}, "content": f"fix of {target}", "supersedes": target}


def imported(record_id: str) -> MemoryRecord:
    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    return MemoryRecord(
        id=record_id, scope={}, content="imported", created_at=stamp, updated_at=stamp
    )


async def test_concurrent_supersedes_in_one_group_exactly_one_wins(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        (original,) = await store.write([note(0)])
        commits = await count_commits(store)
        results = await asyncio.gather(
            *(store.write([MemoryWriteInput(**fix(original.id))]) for _ in range(6)),
            store.invalidate(original.id, "and an invalidate racing them"),
            return_exceptions=True,
        )
        assert commits.count("COMMIT") == 1, commits
        won = [result for result in results[:6] if isinstance(result, list)]
        assert len(won) == 1, results
        lost = [result for result in results[:6] if isinstance(result, MemoryConflictError)]
        assert len(lost) == 5, results
        assert results[6] is None  # already invalid: no change, no error (S4)
        stored = await store.get(original.id)
        assert stored is not None
        assert stored.superseded_by == won[0][0].id
        assert stored.invalid_reason is None


async def test_a_reader_never_sees_a_groups_uncommitted_writes(tmp_path: Path) -> None:
    # A read that gets the connection while a group is open commits the group first,
    # so what it returns is in the file (another connection sees the same).
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store, SqliteMemoryStore(db) as other:
        writes = [asyncio.ensure_future(store.write([note(n)])) for n in range(5)]
        await asyncio.sleep(0)
        seen_here = await store.search(MemorySearchQuery(limit=100))
        seen_there = await other.search(MemorySearchQuery(limit=100))
        assert {hit.record.id for hit in seen_here} <= {hit.record.id for hit in seen_there}
        await asyncio.gather(*writes)
        assert len(await other.search(MemorySearchQuery(limit=100))) == 5


@pytest.mark.parametrize("failing_position", [0, 1, 2])
async def test_a_row_sqlite_refuses_fails_only_its_own_call(
    tmp_path: Path, failing_position: int
) -> None:
    # The ids source hands one call an id that is already stored: SQLite refuses the
    # row when the group's statements run (the first call of a group has no savepoint,
    # so its failure restarts the transaction; the others roll back to theirs).
    sizes = [1, 1, 1]
    sizes[failing_position] = 2
    ids = ["taken"]
    for position in range(len(sizes)):
        ids += (
            [f"fresh-{position}", "taken"] if position == failing_position else [f"ok-{position}"]
        )
    assert sum(sizes) + 1 == len(ids)
    issued = iter(ids)
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db, ids=lambda: next(issued)) as store:
        await store.write([note(0, "seed")])
        commits = await count_commits(store)
        results = await asyncio.gather(
            *(
                store.write([note(n, f"c{position}") for n in range(size)])
                for position, size in enumerate(sizes)
            ),
            return_exceptions=True,
        )
        assert commits.count("COMMIT") == 1, commits
    failed = results[failing_position]
    assert isinstance(failed, StoreUnavailableError), results
    assert "UNIQUE" in str(failed)
    others = [r for position, r in enumerate(results) if position != failing_position]
    assert all(isinstance(r, list) for r in others), results
    async with SqliteMemoryStore(db) as reopened:
        stored = {hit.record.id for hit in await reopened.search(MemorySearchQuery(limit=50))}
    assert stored == {"taken"} | {f"ok-{p}" for p in range(3) if p != failing_position}


async def test_a_queued_caller_cancelled_before_its_turn_does_not_strand_the_group(
    tmp_path: Path,
) -> None:
    # The first call hands the connection on to a queued one and waits for its commit;
    # the queued call is cancelled before it runs, so nobody is left to commit: a
    # task does, and the first call returns with its record in the file.
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store, SqliteMemoryStore(db) as other:
        first = asyncio.ensure_future(store.write([note(1)]))
        queued = asyncio.ensure_future(store.write([note(2)]))
        lock = store._lock
        release = lock.release
        handed_on: list[bool] = []

        def release_and_cancel_the_next() -> None:
            # The moment the first call hands on (its group open), before the queued
            # call can run: cancel that one.
            release()
            if store._commits._group is not None and not handed_on:
                handed_on.append(True)
                queued.cancel()

        lock.release = release_and_cancel_the_next  # type: ignore[method-assign]
        (record,) = await asyncio.wait_for(first, timeout=10)
        assert handed_on == [True]
        await asyncio.gather(queued, return_exceptions=True)
        assert queued.cancelled()
        assert await other.get(record.id) is not None
        assert store._conn is not None
        assert not store._conn.in_transaction


async def test_work_left_for_the_commit_runs_after_the_statements_for_calls_that_landed(
    tmp_path: Path,
) -> None:
    # A batch write builds the records it returns while COMMIT syncs the log
    # (GroupCommit.while_committing): after its rows went in, once, and only for a
    # call whose statements stayed in the transaction (not one SQLite refused, nor one
    # that failed before it finished).
    path = tmp_path / "group.db"
    async with aiosqlite.connect(path, isolation_level=None) as conn:
        await conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        commits = GroupCommit(LoopLock(str(path)), lambda db: None, str(path))
        seen: list[str] = []  # appended from both threads
        await conn.set_trace_callback(lambda sql: seen.append(sql.split()[0].upper()))

        def insert(db: sqlite3.Connection, value: int) -> None:
            db.execute("INSERT INTO t (x) VALUES (?)", (value,)).close()

        async def writer(n: int, value: int, *, give_up: bool = False) -> None:
            async with commits.call(lambda: conn):
                commits.later(insert, value)
                commits.while_committing(lambda: seen.append(f"built {n}"))
                if give_up:  # fails on the event loop, after keeping its work
                    raise LookupError(n)

        outcomes = await asyncio.gather(
            writer(0, 1),
            writer(1, 1),
            writer(3, 3, give_up=True),
            writer(2, 2),
            return_exceptions=True,
        )
        stored = await conn.execute_fetchall("SELECT x FROM t ORDER BY x")
    assert outcomes[0] is None
    assert isinstance(outcomes[1], StoreUnavailableError)  # the duplicate key: its own
    assert isinstance(outcomes[2], LookupError)
    assert outcomes[3] is None
    assert [row[0] for row in stored] == [1, 2]
    assert seen.count("COMMIT") == 1
    built = [entry for entry in seen if entry.startswith("built")]
    assert sorted(built) == ["built 0", "built 2"]
    last_insert = max(i for i, entry in enumerate(seen) if entry == "INSERT")
    assert all(seen.index(entry) > last_insert for entry in built)
