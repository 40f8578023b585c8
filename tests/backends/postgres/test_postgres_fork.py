"""A process forked while a Postgres store is open: refused the inherited pool, whose
sessions the parent goes on using, and free to open its own."""

from __future__ import annotations

import os

import pytest
from tests.python_program import run_python

PROGRAM = """
import asyncio, os, sys
from recallstore import ConfigurationError, MemorySearchQuery, MemoryWriteInput
from recallstore.backends.postgres import PostgresMemoryStore

ANA = {"user": "ana"}

def store() -> PostgresMemoryStore:
    return PostgresMemoryStore(sys.argv[1], schema=sys.argv[2], min_connections=2)

async def in_child(inherited: PostgresMemoryStore) -> None:
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
    for _ in range(3):  # every pooled session still the parent's
        print("parent holds", len(await parents.search(MemorySearchQuery(scope=ANA))))
    await parents.aclose()

asyncio.run(main())
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_process_is_refused_the_inherited_pool_and_can_open_its_own(
    postgres_url: str, postgres_schema: str
) -> None:
    finished = run_python(PROGRAM, postgres_url, postgres_schema)
    assert finished.returncode == 0, finished.stderr
    refusals = [line for line in finished.stdout.splitlines() if line.startswith("child refused")]
    assert len(refusals) == 2, finished.stdout
    for refusal in refusals:
        assert "before fork(); process" in refusal
        assert "its pool, whose sessions the parent goes on using" in refusal
    assert "child's own store holds 2" in finished.stdout
    assert "child exit status 0" in finished.stdout
    assert finished.stdout.count("parent holds 2") == 3, finished.stdout
