"""Many processes creating one brand-new SQLite file at the same moment.

docs/sqlite.md promises that processes may open the same file at once. The first
opener creates and migrates the file while the others probe it; a probe that read the
version and the table list in two statements saw the migration land between them and
refused the file as "another application's tables".
"""

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

PROCESSES = 8
ROUNDS = 50

# A long-lived worker: one line on stdin ("go" + a path) starts a round, so all the
# workers are released within microseconds of each other without re-paying Python's
# start-up each round. Each round opens the file, writes one record and closes.
WORKER = """
import asyncio, random, sys, time
from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.errors import StoreUnavailableError

name = sys.argv[1]

async def once(path):
    async with SqliteMemoryStore(path) as store:
        await store.write([MemoryWriteInput(scope={"worker": name}, content="hello " + name)])

print("ready", flush=True)
for line in sys.stdin:
    # Spread the starts over up to 15 ms, so some processes probe the file
    # while another is creating and migrating it (the window the bug needs).
    time.sleep(random.uniform(0, 0.015))
    try:
        asyncio.run(once(line.strip()))
    except StoreUnavailableError as exc:
        print("refused", str(exc).replace("\\n", " "), flush=True)
    else:
        print("ok", flush=True)
"""


def _stored_rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        (count,) = conn.execute("SELECT count(*) FROM memory_records").fetchone()
    return int(count)


@pytest.mark.slow
def test_processes_creating_one_new_file_at_once_are_never_refused(tmp_path: Path) -> None:
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, f"w{index}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for index in range(PROCESSES)
    ]
    refusals: list[str] = []
    try:
        for worker in workers:
            assert worker.stdout is not None
            assert worker.stdout.readline().strip() == "ready"
        for round_number in range(ROUNDS):
            path = tmp_path / f"round-{round_number}.db"
            for worker in workers:
                assert worker.stdin is not None
                worker.stdin.write(f"{path}\n")
                worker.stdin.flush()
            for worker in workers:
                assert worker.stdout is not None
                answer = worker.stdout.readline().strip()
                if answer != "ok":
                    refusals.append(f"round {round_number}: {answer or 'worker died'}")
            # Every process that was let in wrote its record into the one file.
            assert _stored_rows(path) == PROCESSES - sum(
                r.startswith(f"round {round_number}:") for r in refusals
            )
    finally:
        for worker in workers:
            if worker.stdin is not None:
                worker.stdin.close()
        for worker in workers:
            worker.wait(timeout=30)
            if worker.stdout is not None:
                worker.stdout.close()
    assert refusals == [], f"{len(refusals)} of {PROCESSES * ROUNDS} opens refused: {refusals[:5]}"
