"""Concurrency on one store: chains never fork (S3), batches never get lost (S1)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from recallstore.errors import MemoryConflictError
from recallstore.records import MemoryRecord
from recallstore.store import MemoryStore
from recallstore.testing._harness import StoreHarness, every_record, ids, memory, write_one
from recallstore.testing._rules import kit_test

__all__ = ["ConcurrencyConformance"]


class ConcurrencyConformance(StoreHarness):
    """Calls racing on one opened store, through ``asyncio.gather``."""

    @kit_test(
        "check and invalidate the supersede target under one lock or transaction, never "
        "check-then-await-then-act"
    )
    async def test_s3_two_concurrent_supersedes_of_one_record_exactly_one_wins(
        self, store: MemoryStore
    ) -> None:
        target = await write_one(store, "contested record")
        outcomes = await asyncio.gather(
            store.write([memory("first correction", supersedes=target.id)]),
            store.write([memory("second correction", supersedes=target.id)]),
            return_exceptions=True,
        )
        _assert_exactly_one_won(outcomes)
        (winner,) = [result[0] for result in outcomes if isinstance(result, list)]
        replaced = await store.get(target.id)
        assert replaced is not None
        assert replaced.superseded_by == winner.id
        assert set(ids(await every_record(store))) == {target.id, winner.id}

    @kit_test(
        "check and invalidate the supersede target under one lock or transaction, never "
        "check-then-await-then-act"
    )
    async def test_s3_many_concurrent_supersedes_of_one_record_exactly_one_wins(
        self, store: MemoryStore
    ) -> None:
        target = await write_one(store, "hotly contested record")
        outcomes = await asyncio.gather(
            *(store.write([memory(f"correction {n}", supersedes=target.id)]) for n in range(10)),
            return_exceptions=True,
        )
        _assert_exactly_one_won(outcomes)
        superseders = [r for r in await every_record(store) if r.id != target.id]
        assert len(superseders) == 1
        replaced = await store.get(target.id)
        assert replaced is not None
        assert replaced.superseded_by == superseders[0].id

    @kit_test(
        "invalidate and supersede must serialise on the record: whichever comes second sees it "
        "invalid"
    )
    async def test_s3_concurrent_invalidate_and_supersede_leave_a_consistent_chain(
        self, store: MemoryStore
    ) -> None:
        target = await write_one(store, "raced record")
        supersede, invalidate = await asyncio.gather(
            store.write([memory("raced correction", supersedes=target.id)]),
            store.invalidate(target.id, "raced reason"),
            return_exceptions=True,
        )
        assert invalidate is None, invalidate
        final = await store.get(target.id)
        assert final is not None
        assert final.invalid_at is not None
        if isinstance(supersede, list):
            assert final.superseded_by == supersede[0].id
            assert final.invalid_reason is None
            assert len(await every_record(store)) == 2
        else:
            assert isinstance(supersede, MemoryConflictError), supersede
            assert final.superseded_by is None
            assert final.invalid_reason == "raced reason"
            assert ids(await every_record(store)) == [target.id]

    @kit_test(
        "concurrent invalidations of one record must all return without error and leave one reason"
    )
    async def test_s4_concurrent_invalidations_all_succeed_and_set_one_reason(
        self, store: MemoryStore
    ) -> None:
        target = await write_one(store, "invalidated from many places")
        reasons = [f"reason {n}" for n in range(5)]
        await asyncio.gather(*(store.invalidate(target.id, reason) for reason in reasons))
        final = await store.get(target.id)
        assert final is not None
        assert final.invalid_at is not None
        assert final.invalid_reason in reasons

    @kit_test(
        "concurrent write() calls must each land completely and return their own records in order"
    )
    async def test_s1_concurrent_batch_writes_lose_nothing(self, store: MemoryStore) -> None:
        batches = [[memory(f"batch {b} record {n}") for n in range(5)] for b in range(20)]
        results = await asyncio.gather(*(store.write(batch) for batch in batches))
        for batch, records in zip(batches, results, strict=True):
            assert [record.content for record in records] == [inp.content for inp in batch]
        written = [record.id for records in results for record in records]
        assert len(set(written)) == 100
        assert sorted(ids(await every_record(store))) == sorted(written)

    @kit_test(
        "a batch that fails must roll back only its own records, even while other batches commit"
    )
    async def test_s1_failed_batch_racing_good_batches_writes_nothing_of_its_own(
        self, store: MemoryStore
    ) -> None:
        stale = await write_one(store, "stale record")
        await store.invalidate(stale.id)
        good = [[memory(f"good {b} {n}") for n in range(3)] for b in range(5)]
        bad = [memory("bad neighbour"), memory("bad", supersedes=stale.id)]
        outcomes = await asyncio.gather(
            *(store.write(batch) for batch in good), store.write(bad), return_exceptions=True
        )
        assert isinstance(outcomes[-1], MemoryConflictError)
        contents = {record.content for record in await every_record(store)}
        assert "bad neighbour" not in contents
        assert len(contents) == 1 + 5 * 3

    @kit_test(
        "a cancelled write must commit all of its batch or none of it and must not leave a lock "
        "or transaction open"
    )
    async def test_s1_cancelled_calls_land_whole_or_not_at_all_and_leave_the_store_usable(
        self, store: MemoryStore
    ) -> None:
        # Cancel after 0, 1, 2, ... event-loop steps, so the cancellation lands before,
        # inside and after each backend's transaction (asyncio.timeout cancels this way).
        target = await write_one(store, "target of cancelled calls")
        for steps in range(24):
            batch = [memory(f"cancelled batch {steps} item {n}") for n in range(10)]
            for call in (store.write(batch), store.invalidate(target.id, f"reason {steps}")):
                task = asyncio.ensure_future(call)
                for _ in range(steps):
                    await asyncio.sleep(0)
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            contents = {record.content for record in await every_record(store)}
            landed = sum(inp.content in contents for inp in batch)
            assert landed in (0, len(batch)), f"{landed} of {len(batch)} records landed"
        written = await write_one(store, "written after the cancellations")
        assert await store.get(written.id) == written
        assert await store.get(target.id) is not None


def _assert_exactly_one_won(outcomes: Sequence[list[MemoryRecord] | BaseException]) -> None:
    winners = [result for result in outcomes if isinstance(result, list)]
    losers = [result for result in outcomes if isinstance(result, BaseException)]
    assert len(winners) == 1, outcomes
    assert all(isinstance(loser, MemoryConflictError) for loser in losers), losers
