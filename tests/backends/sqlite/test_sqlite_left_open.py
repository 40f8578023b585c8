"""A program that leaves a SQLite store open still exits, and keeps what it wrote."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.python_program import run_python

from recallstore import MemorySearchQuery
from recallstore.backends.sqlite import SqliteMemoryStore

SCOPE = {"user": "ana"}

# An idle thread pool the program never shut down, as well: Python stops its threads
# at exit only after the store's exit hook has run.
PROGRAM = """
import asyncio, concurrent.futures, sys
from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

pool = concurrent.futures.ThreadPoolExecutor(1)
pool.submit(print, "the pool ran a task").result()

async def main() -> None:
    async with SqliteMemoryStore(sys.argv[1] + ".closed") as closed:
        await closed.write([MemoryWriteInput(scope={"user": "ana"}, content="closed")])
    store = SqliteMemoryStore(sys.argv[1])
    await store.open()
    await store.write([MemoryWriteInput(scope={"user": "ana"}, content="Ana lives in Porto.")])
    if sys.argv[2] == "raise":
        raise RuntimeError("the agent crashed")
    print("finished without closing the store")

asyncio.run(main())
"""


# The main thread returns while a thread of the program's own still uses the store:
# that thread writes again a little after the main thread's last statement, when
# Python is already exiting (a store closed then would refuse the write).
THREADED_PROGRAM = """
import asyncio, sys, threading, time
from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

opened, exiting = threading.Event(), threading.Event()

async def work() -> None:
    store = SqliteMemoryStore(sys.argv[1])
    await store.open()
    await store.write([MemoryWriteInput(scope={"user": "ana"}, content="before the exit")])
    opened.set()
    exiting.wait()
    time.sleep(0.3)
    await store.write([MemoryWriteInput(scope={"user": "ana"}, content="after the exit")])

threading.Thread(target=asyncio.run, args=(work(),)).start()
opened.wait()
exiting.set()
"""


def run_program(db: Path, ending: str, program: str = PROGRAM) -> subprocess.CompletedProcess[str]:
    return run_python(program, str(db), ending)


async def contents(db: Path) -> list[str]:
    async with SqliteMemoryStore(db) as store:
        return [hit.record.content for hit in await store.search(MemorySearchQuery(scope=SCOPE))]


@pytest.mark.parametrize("ending", ["raise", "return"])
async def test_a_program_that_never_closes_its_store_exits_and_keeps_its_write(
    tmp_path: Path, ending: str
) -> None:
    db = tmp_path / "memory.db"
    finished = run_program(db, ending)
    if ending == "raise":
        assert finished.returncode == 1, finished.stderr
        assert "RuntimeError: the agent crashed" in finished.stderr
    else:
        assert finished.returncode == 0, finished.stderr
        assert "finished without closing the store" in finished.stdout
    assert f"the SQLite store at {str(db)!r} was left open" in finished.stderr
    assert finished.stderr.count("was left open") == 1, finished.stderr
    assert await contents(db) == ["Ana lives in Porto."]


async def test_a_thread_still_using_a_store_at_exit_finishes_before_it_is_closed(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    finished = run_program(db, "return", THREADED_PROGRAM)
    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr, finished.stderr
    assert f"the SQLite store at {str(db)!r} was left open" in finished.stderr
    assert sorted(await contents(db)) == ["after the exit", "before the exit"]
