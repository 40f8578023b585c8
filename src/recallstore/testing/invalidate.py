"""S4: ``invalidate`` marks a record invalid once; later calls change nothing."""

from __future__ import annotations

import pytest

from recallstore.errors import MemoryNotFoundError
from recallstore.store import MemoryStore
from recallstore.testing._harness import StoreHarness, search_ids, write_one
from recallstore.testing._rules import kit_test

__all__ = ["InvalidateConformance"]


class InvalidateConformance(StoreHarness):
    """Invalidation: stamps and reason, not-found for missing records, idempotence."""

    @kit_test("invalidate must set invalid_at and updated_at to one new stamp and keep the reason")
    async def test_s4_invalidate_sets_invalid_at_reason_and_updated_at(
        self, store: MemoryStore
    ) -> None:
        record = await write_one(store, "user owns a red bicycle")
        await store.invalidate(record.id, "user sold the bicycle")
        invalid = await store.get(record.id)
        assert invalid is not None
        assert invalid.invalid_at is not None
        assert invalid.invalid_at >= record.created_at
        assert invalid.invalid_reason == "user sold the bicycle"
        assert invalid.updated_at > record.updated_at
        assert invalid.updated_at == invalid.invalid_at  # one stamp for both
        assert invalid.superseded_by is None
        assert invalid.content == record.content

    @kit_test("invalidate(id) without a reason leaves invalid_reason None")
    async def test_s4_invalidate_without_reason_leaves_the_reason_empty(
        self, store: MemoryStore
    ) -> None:
        record = await write_one(store, "temporary note")
        await store.invalidate(record.id)
        invalid = await store.get(record.id)
        assert invalid is not None
        assert invalid.invalid_at is not None
        assert invalid.invalid_reason is None

    @kit_test("raise MemoryNotFoundError(id) for an id the store does not hold")
    async def test_s4_invalidate_of_a_missing_record_is_not_found(self, store: MemoryStore) -> None:
        with pytest.raises(MemoryNotFoundError) as caught:
            await store.invalidate("no-such-record", "whatever")
        assert caught.value.record_id == "no-such-record"

    @kit_test("a deleted record is missing: invalidate must raise MemoryNotFoundError")
    async def test_s4_invalidate_of_a_deleted_record_is_not_found(self, store: MemoryStore) -> None:
        record = await write_one(store, "deleted before invalidation")
        await store.delete(record.id)
        with pytest.raises(MemoryNotFoundError):
            await store.invalidate(record.id)

    @kit_test(
        "invalidating an invalid record must return without touching it (keep the first reason "
        "and stamps)"
    )
    async def test_s4_invalidating_twice_changes_nothing(self, store: MemoryStore) -> None:
        record = await write_one(store, "invalidated twice")
        await store.invalidate(record.id, "first reason")
        first = await store.get(record.id)
        await store.invalidate(record.id, "second reason")
        await store.invalidate(record.id)
        assert await store.get(record.id) == first

    @kit_test("a superseded record is already invalid: invalidate must leave it as it is")
    async def test_s4_invalidating_a_superseded_record_changes_nothing(
        self, store: MemoryStore
    ) -> None:
        old = await write_one(store, "old phone number")
        await write_one(store, "new phone number", supersedes=old.id)
        superseded = await store.get(old.id)
        await store.invalidate(old.id, "also wrong")
        assert await store.get(old.id) == superseded

    @kit_test("invalidate must change only the record with that id")
    async def test_s4_invalidate_touches_only_that_record(self, store: MemoryStore) -> None:
        target = await write_one(store, "target record")
        bystander = await write_one(store, "bystander record")
        await store.invalidate(target.id, "gone")
        assert await store.get(bystander.id) == bystander
        assert await search_ids(store) == [bystander.id]
