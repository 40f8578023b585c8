"""Crashes, concurrent processes and racing supersedes against one real database file."""

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recallstore import MemoryConflictError, MemorySearchQuery, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.schema import MIGRATIONS

# Child processes: wait for a start file (so they really overlap), then act and print
# one line per acknowledged result. Every wait is bounded.
CHILD_PRELUDE = """
import asyncio, sys, time
from pathlib import Path
from recallstore import MemoryConflictError, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

db, start, name, count, supersedes = sys.argv[1:6]

def wait_for_start():
    deadline = time.monotonic() + 20
    while not Path(start).exists():
        if time.monotonic() > deadline:
            sys.exit("start file never appeared")
        time.sleep(0.005)
"""

WRITER = (
    CHILD_PRELUDE
    + """
async def main():
    async with SqliteMemoryStore(db) as store:
        print("ready", flush=True)
        wait_for_start()
        for i in range(int(count)):
            batch = [
                MemoryWriteInput(scope={"writer": name}, content=f"{name} batch {i} item {j}")
                for j in range(3)
            ]
            for record in await store.write(batch):
                print(record.id, flush=True)

asyncio.run(main())
"""
)

SUPERSEDER = (
    CHILD_PRELUDE
    + """
async def main():
    async with SqliteMemoryStore(db) as store:
        print("ready", flush=True)
        wait_for_start()
        new = MemoryWriteInput(scope={}, content=f"correction by {name}", supersedes=supersedes)
        try:
            record = (await store.write([new]))[0]
        except MemoryConflictError:
            print("conflict", flush=True)
        else:
            print("won", record.id, flush=True)

asyncio.run(main())
"""
)


def spawn(script: str, db: Path, start: Path, name: str, count: int = 0, supersedes: str = "-"):
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(db), str(start), name, str(count), supersedes],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready", child.stderr.read() if child.stderr else ""
    return child


def acknowledged_until_killed(child: subprocess.Popen[str], count: int) -> list[str]:
    """The ids a writer child printed: ``count`` of them, then SIGKILL, then the ones it
    printed just before it died."""
    assert child.stdout is not None
    acknowledged: list[str] = []
    while len(acknowledged) < count:
        line = child.stdout.readline()
        assert line, f"writer died early: {child.stderr.read() if child.stderr else ''}"
        acknowledged.append(line.strip())
    os.kill(child.pid, signal.SIGKILL)
    rest, _ = child.communicate(timeout=30)
    acknowledged.extend(rest.split())
    assert child.returncode == -signal.SIGKILL
    return acknowledged


async def all_records(db: Path) -> list[str]:
    async with SqliteMemoryStore(db) as store:
        hits = await store.search(MemorySearchQuery(limit=1000, include_invalidated=True))
    return [hit.record.content for hit in hits]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_every_acknowledged_write_survives_a_kill(tmp_path: Path) -> None:
    db, start = tmp_path / "memory.db", tmp_path / "start"
    child = spawn(WRITER, db, start, "crash", count=100_000)
    start.touch()
    acknowledged = acknowledged_until_killed(child, 90)

    async def check() -> None:
        async with SqliteMemoryStore(db) as store:
            for record_id in acknowledged:
                assert await store.get(record_id) is not None, record_id
            hits = await store.search(MemorySearchQuery(limit=1000))
        batches: dict[str, int] = {}
        for hit in hits:
            batch = hit.record.content.rsplit(" item ", 1)[0]
            batches[batch] = batches.get(batch, 0) + 1
        assert set(batches.values()) == {3}, "a batch was torn by the kill"

    asyncio.run(check())


# Group commit: a child with 16 writer tasks on one store; it prints each id the moment write()
# returns it. The parent kills it with SIGKILL and reopens the file.
CONCURRENT_WRITER = """
import asyncio, sys
from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

async def writer(store, name):
    for i in range(100_000):
        (record,) = await store.write([MemoryWriteInput(scope={"w": name}, content=f"{name} {i}")])
        sys.stdout.write(record.id + "\\n")
        sys.stdout.flush()

async def main():
    async with SqliteMemoryStore(sys.argv[1]) as store:
        await asyncio.gather(*(writer(store, f"w{n}") for n in range(16)))

asyncio.run(main())
"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_an_acknowledged_group_write_survives_kill_9(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CONCURRENT_WRITER, str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acknowledged = acknowledged_until_killed(child, 400)

    async def missing() -> list[str]:
        async with SqliteMemoryStore(db) as store:
            return [rid for rid in acknowledged if await store.get(rid) is None]

    assert asyncio.run(missing()) == []


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    db, start = tmp_path / "memory.db", tmp_path / "start"
    children = [spawn(WRITER, db, start, name, count=25) for name in ("left", "right")]
    start.touch()
    ids: list[str] = []
    for child in children:
        out, err = child.communicate(timeout=90)
        assert child.returncode == 0, err
        ids.extend(out.split())
    assert len(ids) == len(set(ids)) == 150
    contents = asyncio.run(all_records(db))
    assert len(contents) == 150
    for name in ("left", "right"):
        assert {c for c in contents if c.startswith(name)} == {
            f"{name} batch {i} item {j}" for i in range(25) for j in range(3)
        }


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_racing_supersedes_in_two_processes_exactly_one_wins(tmp_path: Path) -> None:
    db, start = tmp_path / "memory.db", tmp_path / "start"

    async def seed() -> str:
        async with SqliteMemoryStore(db) as store:
            return (await store.write([MemoryWriteInput(scope={}, content="original")]))[0].id

    original = asyncio.run(seed())
    children = [spawn(SUPERSEDER, db, start, n, supersedes=original) for n in ("p1", "p2", "p3")]
    time.sleep(0.05)
    start.touch()
    outcomes = []
    for child in children:
        out, err = child.communicate(timeout=90)
        assert child.returncode == 0, err
        outcomes.append(out.split())
    winners = [outcome for outcome in outcomes if outcome[0] == "won"]
    assert len(winners) == 1, outcomes
    assert sorted(outcome[0] for outcome in outcomes) == ["conflict", "conflict", "won"]

    async def check() -> None:
        async with SqliteMemoryStore(db) as store:
            old = await store.get(original)
            assert old is not None
            assert old.superseded_by == winners[0][1]
            listed = await store.search(MemorySearchQuery(include_invalidated=True))
        assert len(listed) == 2

    asyncio.run(check())


async def test_racing_supersedes_on_two_connections_exactly_one_wins(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as first, SqliteMemoryStore(db) as second:
        original = (await first.write([MemoryWriteInput(scope={}, content="original")]))[0]
        for round_ in range(10):
            results = await asyncio.gather(
                *[
                    store.write(
                        [
                            MemoryWriteInput(
                                scope={}, content=f"fix {round_} {n}", supersedes=original.id
                            )
                        ]
                    )
                    for n, store in enumerate((first, second, first, second))
                ],
                return_exceptions=True,
            )
            won = [result for result in results if isinstance(result, list)]
            lost = [result for result in results if isinstance(result, MemoryConflictError)]
            assert len(won) == 1, results
            assert len(lost) == 3, results
            stored = await second.get(original.id)
            assert stored is not None
            assert stored.superseded_by == won[0][0].id
            original = won[0][0]
        chain = await first.search(MemorySearchQuery(include_invalidated=True, limit=100))
        assert len(chain) == 11
        assert len(await first.search(MemorySearchQuery())) == 1


async def test_many_stores_opening_a_new_file_at_once_migrate_it_once(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    stores = [SqliteMemoryStore(db) for _ in range(4)]
    await asyncio.gather(*(store.open() for store in stores))
    try:
        written = await asyncio.gather(
            *(
                store.write([MemoryWriteInput(scope={}, content=f"from store {n}")])
                for n, store in enumerate(stores)
            )
        )
        listed = await stores[0].search(MemorySearchQuery())
        assert {hit.record.id for hit in listed} == {batch[0].id for batch in written}
    finally:
        await asyncio.gather(*(store.aclose() for store in stores))
    with sqlite3.connect(db) as conn:
        migrations = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
    conn.close()
    assert migrations == (len(MIGRATIONS),)  # each step applied once, by one of the stores


async def test_a_cancelled_call_leaves_no_open_transaction_and_no_held_lock(
    tmp_path: Path,
) -> None:
    # Cancel write/invalidate/delete after every number of event-loop steps up to 40, so
    # the cancellation lands on BEGIN, the statements, COMMIT and after completion.
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        (target,) = await store.write([MemoryWriteInput(scope={}, content="target")])
        for steps in range(40):
            batch = [
                MemoryWriteInput(scope={"step": str(steps)}, content=f"x {n}") for n in range(20)
            ]
            calls = [store.write(batch), store.invalidate(target.id), store.delete("missing")]
            for call in calls:
                task = asyncio.ensure_future(call)
                for _ in range(steps):
                    await asyncio.sleep(0)
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                # The next call on the store works, and queues behind anything left running.
                assert await store.get("missing") is None
                assert store._conn is not None
                assert not store._conn.in_transaction
                # Another connection can take the write lock at once: nothing holds it.
                other = sqlite3.connect(db, timeout=0, isolation_level=None)
                try:
                    other.execute("BEGIN IMMEDIATE")
                    other.execute("ROLLBACK")
                finally:
                    other.close()
            stored = await store.search(MemorySearchQuery(scope={"step": str(steps)}, limit=50))
            assert len(stored) in (0, len(batch)), "a cancelled batch landed in part"
        await store.write([MemoryWriteInput(scope={}, content="still writable")])
