"""S15: capabilities() declares search mode and durability; durable stores keep data.

``DurabilityConformance`` is the sub-suite for ``capabilities().durable``: it reopens
the location through the ``store_factory`` fixture and, unless the store declares
``single_opener=True``, opens two stores on it at once. ``SingleOpenerConformance``
is the sub-suite for ``single_opener=True``: a second opener is refused.
"""

from __future__ import annotations

import asyncio
import inspect

import pytest

from recallstore.errors import MemoryConflictError, StoreUnavailableError
from recallstore.records import MemoryStoreCapabilities
from recallstore.store import MemoryStore
from recallstore.testing._checked import CheckedStore
from recallstore.testing._harness import (
    StoreFactory,
    StoreHarness,
    every_record,
    memory,
    search_ids,
    unwrap,
    write_one,
)
from recallstore.testing._rules import kit_test

__all__ = ["CapabilitiesConformance", "DurabilityConformance", "SingleOpenerConformance"]


class CapabilitiesConformance(StoreHarness):
    """Every store declares what it offers, synchronously and consistently."""

    @kit_test(
        "capabilities() must be a plain method returning the same MemoryStoreCapabilities every "
        "call"
    )
    async def test_s15_capabilities_declare_search_mode_and_durability(
        self, store: MemoryStore
    ) -> None:
        declared = store.capabilities()
        assert not inspect.isawaitable(declared)
        assert isinstance(declared, MemoryStoreCapabilities)
        assert declared.search in ("keyword", "semantic", "hybrid")
        assert isinstance(declared.durable, bool)
        assert all(isinstance(name, str) and name for name in declared.extensions)
        assert store.capabilities() == declared

    @kit_test("write, search, get, invalidate and delete must be async methods of the store")
    async def test_s15_store_implements_the_protocol(self, store: MemoryStore) -> None:
        backend = unwrap(store)
        assert isinstance(backend, MemoryStore)
        for name in ("write", "search", "get", "invalidate", "delete"):
            assert inspect.iscoroutinefunction(getattr(backend, name)), name


class DurabilityConformance(StoreHarness):
    """Sub-suite for ``capabilities().durable``: data outlives the store object."""

    @kit_test(
        "a store declaring durable=True must find every record, state and deletion again "
        "after closing and reopening"
    )
    async def test_s15_durable_store_keeps_everything_after_reopening(
        self, durable_store: CheckedStore, store_factory: StoreFactory
    ) -> None:
        kept = await write_one(durable_store, "persistent walrus fact", scope={"tenant": "acme"})
        old = await write_one(durable_store, "old address")
        await write_one(durable_store, "new address", supersedes=old.id)
        invalid = await write_one(durable_store, "wrong claim")
        await durable_store.invalidate(invalid.id, "user corrected it")
        forgotten = await write_one(durable_store, "forgotten secret")
        await durable_store.delete(forgotten.id)
        before = await every_record(durable_store)
        await durable_store.aclose()
        async with store_factory() as reopened:
            assert await every_record(reopened) == before
            assert await reopened.get(forgotten.id) is None
            assert await search_ids(reopened, "walrus", scope={"tenant": "acme"}) == [kept.id]
            assert await search_ids(reopened, "secret", include_invalidated=True) == []

    @kit_test(
        "after reopening, new created_at stamps must come after the newest stored one "
        "(MonotonicClock.observe)"
    )
    async def test_s15_reopened_store_continues_the_recency_order(
        self, durable_store: CheckedStore, store_factory: StoreFactory
    ) -> None:
        earlier = await write_one(durable_store, "written before reopening")
        await durable_store.aclose()
        async with store_factory() as reopened:
            later = await write_one(reopened, "written after reopening")
            assert later.created_at > earlier.created_at
            assert await search_ids(reopened) == [later.id, earlier.id]

    @kit_test(
        "two stores open on one location must read each other's committed writes; declare "
        "single_opener=True if yours cannot"
    )
    async def test_s15_two_open_stores_see_each_others_writes(
        self, shared_store: MemoryStore, store_factory: StoreFactory
    ) -> None:
        durable_store = shared_store
        async with store_factory() as other:
            mine = await write_one(durable_store, "written by the first store")
            theirs = await write_one(other, "written by the second store")
            assert await other.get(mine.id) == mine
            assert await durable_store.get(theirs.id) == theirs
            await other.invalidate(mine.id, "seen elsewhere")
            invalid = await durable_store.get(mine.id)
            assert invalid is not None
            assert invalid.invalid_reason == "seen elsewhere"
            assert await search_ids(durable_store, "written") == [theirs.id]

    @kit_test(
        "check the supersede target inside the writing transaction, under a lock other openers "
        "respect"
    )
    async def test_s15_concurrent_supersedes_from_two_stores_exactly_one_wins(
        self, shared_store: MemoryStore, store_factory: StoreFactory
    ) -> None:
        durable_store = shared_store
        target = await write_one(durable_store, "contested record")
        async with store_factory() as other:
            outcomes = await asyncio.gather(
                durable_store.write([memory("fix from store one", supersedes=target.id)]),
                other.write([memory("fix from store two", supersedes=target.id)]),
                return_exceptions=True,
            )
        winners = [result for result in outcomes if isinstance(result, list)]
        losers = [result for result in outcomes if isinstance(result, BaseException)]
        assert len(winners) == 1, outcomes
        assert len(losers) == 1
        assert isinstance(losers[0], MemoryConflictError), losers
        replaced = await durable_store.get(target.id)
        assert replaced is not None
        assert replaced.superseded_by == winners[0][0].id
        assert len(await every_record(durable_store)) == 2


class SingleOpenerConformance(StoreHarness):
    """Sub-suite for ``single_opener=True``: one open store per location, the next refused."""

    @kit_test(
        "while a store is open on a location, entering a second one there must raise "
        "StoreUnavailableError and change nothing; once the first closes, it opens"
    )
    async def test_s15_single_opener_store_refuses_a_second_opener_until_closed(
        self, single_opener_store: CheckedStore, store_factory: StoreFactory
    ) -> None:
        kept = await write_one(single_opener_store, "only one opener at a time")
        second = store_factory()
        try:
            await second.__aenter__()
        except StoreUnavailableError:
            pass
        else:
            await second.__aexit__(None, None, None)
            pytest.fail("a second store opened on a location that is already open")
        assert await every_record(single_opener_store) == [kept]
        await write_one(single_opener_store, "the first store still works")
        await single_opener_store.aclose()
        async with store_factory() as reopened:
            assert len(await every_record(reopened)) == 2
