"""S1 (atomic, ordered batch writes) and S2 (creation stamps, unique ids)."""

from __future__ import annotations

import urllib.parse
from datetime import timedelta

import pytest

from recallstore.errors import MemoryConflictError, MemoryNotFoundError
from recallstore.store import MemoryStore
from recallstore.testing._harness import StoreHarness, every_record, ids, memory, write_one
from recallstore.testing._rules import kit_test
from recallstore.values import utc_now

__all__ = ["WriteConformance"]


class WriteConformance(StoreHarness):
    """``write``: all-or-nothing batches returned in input order, stamped and uniquely named."""

    @kit_test("return the records in the order of the inputs")
    async def test_s1_write_returns_records_in_input_order(self, store: MemoryStore) -> None:
        contents = [f"ordered record number {n}" for n in range(12)]
        records = await store.write([memory(text) for text in contents])
        assert [record.content for record in records] == contents
        for record in records:
            assert await store.get(record.id) == record

    @kit_test("write([]) returns [] and writes nothing")
    async def test_s1_empty_batch_returns_empty_list(self, store: MemoryStore) -> None:
        assert await store.write([]) == []
        assert await every_record(store) == []

    @kit_test("validate the whole batch before writing, or roll the transaction back")
    async def test_s1_batch_with_a_conflict_in_the_middle_writes_nothing(
        self, store: MemoryStore
    ) -> None:
        stale = await write_one(store, "stale record")
        await store.invalidate(stale.id, "outdated")
        before = await every_record(store)
        batch = [memory("first of batch"), memory("bad", supersedes=stale.id), memory("last")]
        with pytest.raises(MemoryConflictError):
            await store.write(batch)
        assert await every_record(store) == before

    @kit_test("a failed batch must not invalidate the targets of its earlier items")
    async def test_s1_failed_batch_leaves_earlier_supersede_targets_valid(
        self, store: MemoryStore
    ) -> None:
        healthy = await write_one(store, "healthy record")
        stale = await write_one(store, "stale record")
        await store.invalidate(stale.id)
        before = await every_record(store)
        batch = [memory("fixes healthy", supersedes=healthy.id), memory("x", supersedes=stale.id)]
        with pytest.raises(MemoryConflictError):
            await store.write(batch)
        assert await store.get(healthy.id) == healthy
        assert await every_record(store) == before

    @kit_test("a missing supersedes target fails the whole batch")
    async def test_s1_batch_with_a_missing_supersedes_target_writes_nothing(
        self, store: MemoryStore
    ) -> None:
        await write_one(store, "existing record")
        before = await every_record(store)
        with pytest.raises(MemoryNotFoundError):
            await store.write([memory("new one"), memory("orphan", supersedes="no-such-id")])
        assert await every_record(store) == before

    @kit_test("two items superseding one record is a conflict for the whole batch")
    async def test_s1_batch_superseding_one_record_twice_writes_nothing(
        self, store: MemoryStore
    ) -> None:
        target = await write_one(store, "target record")
        before = await every_record(store)
        twice = [memory("fix one", supersedes=target.id), memory("fix two", supersedes=target.id)]
        with pytest.raises(MemoryConflictError):
            await store.write(twice)
        assert await every_record(store) == before
        assert await store.get(target.id) == target

    @kit_test("write every record of a large batch")
    async def test_s1_large_batch_is_written_completely(self, store: MemoryStore) -> None:
        records = await store.write([memory(f"bulk record {n}") for n in range(300)])
        assert len(records) == 300
        assert sorted(ids(await every_record(store))) == sorted(ids(records))

    @kit_test("stamp created_at and updated_at with one value (record_from_input does)")
    async def test_s2_created_at_equals_updated_at_on_create(self, store: MemoryStore) -> None:
        records = await store.write([memory(f"fresh record {n}") for n in range(5)])
        records.append(await write_one(store, "single fresh record"))
        for record in records:
            assert record.created_at == record.updated_at
            assert record.invalid_at is None
            assert record.superseded_by is None
            assert record.invalid_reason is None
            stored = await store.get(record.id)
            assert stored is not None
            assert stored.created_at == stored.updated_at == record.created_at

    @kit_test("stamp records from the current UTC time")
    async def test_s2_created_at_is_the_current_utc_time(self, store: MemoryStore) -> None:
        before = utc_now()
        record = await write_one(store, "stamped record")
        after = utc_now()
        assert record.created_at.utcoffset() == timedelta(0)
        # A generous margin: the rule is "stamped now", not a timing bound.
        assert before - timedelta(seconds=5) <= record.created_at <= after + timedelta(seconds=5)

    @kit_test(
        "stamp each record of a batch from the clock in turn (MonotonicClock), not the "
        "whole batch with one time"
    )
    async def test_s2_created_at_strictly_increases_within_a_batch(
        self, store: MemoryStore
    ) -> None:
        records = await store.write([memory(f"batch member {n}") for n in range(20)])
        stamps = [record.created_at for record in records]
        assert stamps == sorted(stamps)
        assert len(set(stamps)) == len(stamps), "two records of one batch share created_at"
        assert ids(await every_record(store)) == ids(reversed(records))

    @kit_test("generate a fresh id per record (new_record_id)")
    async def test_s2_ids_are_unique_within_and_across_batches(self, store: MemoryStore) -> None:
        written = await store.write([memory("same content") for _ in range(50)])
        for _ in range(10):
            written.append(await write_one(store, "same content"))
        assert len(set(ids(written))) == len(written)

    @kit_test("ids may only use URL-safe characters (new_record_id does)")
    async def test_s2_ids_are_url_safe(self, store: MemoryStore) -> None:
        records = await store.write([memory(f"record {n}") for n in range(20)])
        for record in records:
            assert record.id
            assert urllib.parse.quote(record.id, safe="-._~") == record.id
