"""A process forked while a store is open, on each backend that holds connections: the
child's calls on the inherited store are refused (they used to wait forever: SQLite's
connection without its worker thread, a pool whose sockets are the parent's), its
aclose() returns without touching the parent's connections, and a store it opens itself
works; the parent's store is unharmed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.postgres_server import postgres_schema, postgres_url
from tests.python_program import run_python

__all__ = ["postgres_schema", "postgres_url"]  # fixtures, for the Postgres case

PROGRAM = """
import asyncio, os, sys
from recallstore import ConfigurationError, MemorySearchQuery, MemoryWriteInput
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore

ANA = {"user": "ana"}

def store():
    if sys.argv[1] == "sqlite":
        return SqliteMemoryStore(sys.argv[2])
    return PostgresMemoryStore(sys.argv[2], schema=sys.argv[3], min_connections=2)

async def in_child(inherited) -> None:
    for call in (inherited.search(MemorySearchQuery(scope=ANA)), inherited.open()):
        try:
            await call
        except ConfigurationError as refused:
            print("child refused:", refused)
    await inherited.aclose()
    async with store() as own:
        await own.write([MemoryWriteInput(scope=ANA, content="written by the child")])
        print("child's own store holds", len(await own.search(MemorySearchQuery(scope=ANA))))

async def main() -> None:
    parents = store()
    await parents.open()
    await parents.write([MemoryWriteInput(scope=ANA, content="written before the fork")])
    child = os.fork()
    if child == 0:
        asyncio.run(in_child(parents))
        os._exit(0)
    _, status = await asyncio.to_thread(os.waitpid, child, 0)
    print("child exit status", status)
    for _ in range(3):  # every connection still the parent's
        print("parent holds", len(await parents.search(MemorySearchQuery(scope=ANA))))
    await parents.aclose()

asyncio.run(main())
"""

# What each backend's refusal says the child's copy holds.
COPIES = {
    "sqlite": "SQLite forbids using a connection across a fork",
    "postgres": "its pool, whose sessions the parent goes on using",
}


@pytest.fixture(params=sorted(COPIES))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """The program's arguments: the backend, then its target."""
    if request.param == "sqlite":
        return ["sqlite", str(tmp_path / "memory.db")]
    url = request.getfixturevalue("postgres_url")
    return ["postgres", url, request.getfixturevalue("postgres_schema")]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_process_is_refused_the_inherited_store_and_can_open_its_own(
    backend: list[str],
) -> None:
    finished = run_python(PROGRAM, *backend)
    assert finished.returncode == 0, finished.stderr
    refusals = [line for line in finished.stdout.splitlines() if line.startswith("child refused")]
    assert len(refusals) == 2, finished.stdout
    for refusal in refusals:
        assert "before fork(); process" in refusal
        assert COPIES[backend[0]] in refusal
        assert "open a new store after forking" in refusal
    assert "child's own store holds 2" in finished.stdout
    assert "child exit status 0" in finished.stdout
    assert finished.stdout.count("parent holds 2") == 3, finished.stdout
    assert "was left open" not in finished.stderr
