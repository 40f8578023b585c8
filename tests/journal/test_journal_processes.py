"""The journal across processes: eight writers at once, and a writer killed mid-batch.

Children are real Python processes on one SQLite file; the parent reads the journal
and the records afterwards and checks they describe each other exactly.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.events.journal import journal_event
from recallstore.events.models import MemoryWriteEvent

WRITER = """
import asyncio, json, sys, time
from pathlib import Path
from recallstore import MemoryNotFoundError, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

async def main(db, start, worker, count):
    while not Path(start).exists():
        time.sleep(0.005)
    saved, failed = [], 0
    async with SqliteMemoryStore(db) as store:
        for n in range(count):
            scope = {"worker": str(worker)}
            if n % 5 == 4:
                try:  # a write that fails: its target does not exist
                    bad = MemoryWriteInput(scope=scope, content="x", supersedes="nope")
                    await store.write([bad])
                except MemoryNotFoundError:
                    failed += 1
                continue
            [record] = await store.write([MemoryWriteInput(scope=scope, content=f"w{worker} n{n}")])
            saved.append(record.id)
    print(json.dumps({"saved": saved, "failed": failed}), flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
"""

BATCHER = """
import asyncio, sys, threading
from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.driver import choose_sqlite

HOLD_AT = 3
batch = 0
module = choose_sqlite().module  # the driver the store will pick

class Holding(module.Connection):
    # Batch HOLD_AT's COMMIT never runs: its rows and journal rows are written in the
    # open transaction, the child says so, and waits there to be killed.
    def execute(self, sql, *args):
        if batch == HOLD_AT and sql.strip().upper() == "COMMIT":
            [rows] = super().execute("SELECT count(*) FROM memory_records").fetchone()
            print(f"holding {batch} {int(self.in_transaction)} {rows}", flush=True)
            threading.Event().wait()
        return super().execute(sql, *args)

connect = module.connect
module.connect = lambda *args, **kwargs: connect(*args, factory=Holding, **kwargs)

async def main(db):
    global batch
    async with SqliteMemoryStore(db) as store:
        while True:
            print(f"begin {batch}", flush=True)
            scope = {"batch": str(batch)}
            inputs = [MemoryWriteInput(scope=scope, content=f"item {i}") for i in range(2000)]
            await store.write(inputs)
            print(f"committed {batch}", flush=True)
            batch += 1

asyncio.run(main(sys.argv[1]))
"""


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


async def _journal_writes(db: Path) -> list[MemoryWriteEvent]:
    async with SqliteMemoryStore(db) as store:
        await store.flush_journal()
        entries = await store.read_journal(0, 100_000)
    events = [journal_event(entry) for entry in entries]
    return [event for event in events if isinstance(event, MemoryWriteEvent)]


@pytest.mark.slow
async def test_eight_writers_at_once_one_event_per_committed_write_none_for_failures(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    start = tmp_path / "start"
    async with SqliteMemoryStore(db):
        pass  # create and migrate the file once
    children = [
        subprocess.Popen(  # noqa: ASYNC220 - the children must start together
            [sys.executable, "-c", WRITER, str(db), str(start), str(worker), "25"],
            stdout=subprocess.PIPE,
            text=True,
            env=_child_env(),
        )
        for worker in range(8)
    ]
    start.touch()
    reports = []
    for child in children:
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0
        reports.append(json.loads(out))
    saved = [record_id for report in reports for record_id in report["saved"]]
    assert sum(report["failed"] for report in reports) == 8 * 5
    assert len(saved) == 8 * 20

    events = await _journal_writes(db)
    ids = [event.id for event in events]
    assert ids == sorted(set(ids)), "journal ids strictly increase"
    assert all(event.data.ok for event in events)
    # One event per committed write, naming exactly its record; none for a failed write.
    assert sorted(rid for event in events for rid in event.data.record_ids) == sorted(saved)
    assert len(events) == len(saved)
    # Each worker's events appear in the order that worker committed them.
    for worker, report in enumerate(reports):
        mine = [e.data.record_ids[0] for e in events if e.scope == {"worker": str(worker)}]
        assert mine == report["saved"]


@pytest.mark.slow
async def test_a_writer_killed_mid_batch_leaves_no_event_for_the_lost_batch(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db):
        pass
    child = subprocess.Popen(  # noqa: ASYNC220 - read line by line below
        [sys.executable, "-c", BATCHER, str(db)],
        stdout=subprocess.PIPE,
        text=True,
        env=_child_env(),
    )
    assert child.stdout is not None
    committed: list[int] = []
    held: list[str] = []
    try:
        # The child stops itself inside batch 3's transaction, just before its COMMIT, and
        # says so: the kill lands there however slow the machine (no timing involved).
        for line in child.stdout:
            kind, number, *rest = line.split()
            if kind == "committed":
                committed.append(int(number))
            elif kind == "holding":
                held = [number, *rest]
                child.send_signal(signal.SIGKILL)
                break
    finally:
        child.kill()
        child.wait(timeout=120)
    # Killed in batch 3's open transaction, with its 2,000 rows written in it.
    assert held == ["3", "1", str(4 * 2000)]
    assert child.returncode == -signal.SIGKILL
    assert committed == [0, 1, 2]

    with sqlite3.connect(db) as conn:
        stored = dict(conn.execute("SELECT id, scope FROM memory_records").fetchall())
    conn.close()
    events = await _journal_writes(db)
    # Exactly the three committed batches, each one event naming all of its records.
    assert [event.scope for event in events] == [{"batch": str(n)} for n in committed]
    assert [event.data.count for event in events] == [2000, 2000, 2000]
    assert sorted(rid for event in events for rid in event.data.record_ids) == sorted(stored)
    assert not any('"3"' in scope for scope in stored.values())
