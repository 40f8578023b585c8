"""A program that leaves a SQLite store open still exits, and keeps what it wrote; a
process forked while it is open is refused it, and opens its own."""

from __future__ import annotations

import os
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


# A process forked while a store is open: the child's calls on the inherited store are
# refused (they used to wait forever for a worker thread the child does not have), its
# aclose() returns, and a store it opens itself works; the parent's store is unharmed.
FORKING_PROGRAM = """
import asyncio, os, sys
from recallstore import ConfigurationError, MemorySearchQuery, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

ANA = {"user": "ana"}

async def in_child(store) -> None:
    for call in (store.search(MemorySearchQuery(scope=ANA)), store.open()):
        try:
            await call
        except ConfigurationError as refused:
            print("child refused:", refused)
    await store.aclose()
    async with SqliteMemoryStore(sys.argv[1]) as own:
        await own.write([MemoryWriteInput(scope=ANA, content="written by the child")])
        print("child's own store holds", len(await own.search(MemorySearchQuery(scope=ANA))))

async def main() -> None:
    store = SqliteMemoryStore(sys.argv[1])
    await store.open()
    await store.write([MemoryWriteInput(scope=ANA, content="written before the fork")])
    child = os.fork()
    if child == 0:
        asyncio.run(in_child(store))
        os._exit(0)
    _, status = await asyncio.to_thread(os.waitpid, child, 0)
    print("child exit status", status)
    print("parent holds", len(await store.search(MemorySearchQuery(scope=ANA))))
    await store.aclose()

asyncio.run(main())
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_process_is_refused_the_inherited_store_and_can_open_its_own(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    finished = run_program(db, "return", FORKING_PROGRAM)
    assert finished.returncode == 0, finished.stderr
    refusals = [line for line in finished.stdout.splitlines() if line.startswith("child refused")]
    assert len(refusals) == 2, finished.stdout
    for refusal in refusals:
        assert str(db) in refusal
        assert "SQLite forbids using a connection across a fork" in refusal
        assert "open a new store after forking" in refusal
    assert "child's own store holds 2" in finished.stdout
    assert "child exit status 0" in finished.stdout
    assert "parent holds 2" in finished.stdout
    assert "was left open" not in finished.stderr
