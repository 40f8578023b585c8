"""Supersede chains walked both ways over a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.chain import MAX_CHAIN_STEPS, supersede_chain
from recallstore.records import MemoryRecord, MemoryWriteInput
from recallstore.store import MemoryStore

SCOPE = {"tenant": "acme", "user": "u_42"}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MemoryStore]:
    async with SqliteMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


async def test_the_chain_is_walked_both_ways_and_survives_a_deleted_link(
    store: MemoryStore,
) -> None:
    async def write(content: str, supersedes: str | None = None) -> MemoryRecord:
        [record] = await store.write(
            [MemoryWriteInput(scope=SCOPE, content=content, supersedes=supersedes)]
        )
        return record

    one = await write("one")
    two = await write("two", one.id)
    three = await write("three", two.id)
    four = await write("four", three.id)
    await write("unrelated")

    middle = await store.get(two.id)
    assert middle is not None
    chain = await supersede_chain(store, middle)
    assert [link.id for link in chain.older] == [one.id]
    assert [link.id for link in chain.newer] == [three.id, four.id]
    assert [link.id for link in chain.links] == [one.id, two.id, three.id, four.id]
    assert not chain.is_single

    await store.delete(three.id)
    middle = await store.get(two.id)
    assert middle is not None
    broken = await supersede_chain(store, middle)
    assert [(link.id, link.record is None) for link in broken.newer] == [(three.id, True)]

    single = await supersede_chain(store, await write("alone"))
    assert single.is_single
    assert [link.id for link in single.links] == [single.current.id]


async def test_a_complete_walk_finds_predecessors_beyond_the_newest_listing(
    store: MemoryStore,
) -> None:
    [old] = await store.write([MemoryWriteInput(scope=SCOPE, content="old")])
    [new] = await store.write([MemoryWriteInput(scope=SCOPE, content="new", supersedes=old.id)])
    await store.write([MemoryWriteInput(scope=SCOPE, content=f"later {i}") for i in range(1000)])

    # The page view looks at the newest 1000 records of the scope only (documented)...
    assert (await supersede_chain(store, new)).is_single
    # ...the command line's walk reads them all.
    complete = await supersede_chain(store, new, complete=True)
    assert [link.id for link in complete.links] == [old.id, new.id]


async def test_a_walk_stops_after_max_chain_steps_each_way(store: MemoryStore) -> None:
    [first] = await store.write([MemoryWriteInput(scope=SCOPE, content="version 0")])
    records = [first]
    for number in range(1, 2 * MAX_CHAIN_STEPS + 3):
        [record] = await store.write(
            [MemoryWriteInput(scope=SCOPE, content=f"version {number}", supersedes=records[-1].id)]
        )
        records.append(record)
    middle = await store.get(records[MAX_CHAIN_STEPS + 1].id)
    assert middle is not None
    chain = await supersede_chain(store, middle)
    assert len(chain.older) == MAX_CHAIN_STEPS
    assert len(chain.newer) == MAX_CHAIN_STEPS
    assert [link.id for link in chain.links] == [r.id for r in records[1 : 2 * MAX_CHAIN_STEPS + 2]]
