"""S3: ``supersedes`` writes the correction and invalidates the old record in one step."""

from __future__ import annotations

import pytest

from recallstore.errors import MemoryConflictError, MemoryNotFoundError
from recallstore.store import MemoryStore
from recallstore.testing._harness import (
    StoreHarness,
    every_record,
    ids,
    memory,
    search_ids,
    write_one,
)
from recallstore.testing._rules import kit_test

__all__ = ["SupersedeConformance"]


class SupersedeConformance(StoreHarness):
    """Supersede chains: correct stamps, not-found and conflict outcomes, no forks."""

    @kit_test(
        "set the old record's invalid_at to the new record's created_at and superseded_by to its id"
    )
    async def test_s3_supersede_invalidates_the_old_record_at_the_new_created_at(
        self, store: MemoryStore
    ) -> None:
        old = await write_one(store, "user lives in Lisbon")
        new = await write_one(store, "user lives in Porto", supersedes=old.id)
        replaced = await store.get(old.id)
        assert replaced is not None
        assert replaced.invalid_at == new.created_at
        assert replaced.superseded_by == new.id
        assert replaced.content == old.content
        assert new.invalid_at is None
        assert new.superseded_by is None

    @kit_test("set the old record's updated_at to the new record's created_at too")
    async def test_s3_supersede_bumps_the_old_records_updated_at(self, store: MemoryStore) -> None:
        old = await write_one(store, "favourite colour is green")
        new = await write_one(store, "favourite colour is blue", supersedes=old.id)
        replaced = await store.get(old.id)
        assert replaced is not None
        assert replaced.updated_at > old.updated_at
        assert replaced.updated_at == new.created_at
        assert replaced.created_at == old.created_at

    @kit_test("a superseded record is invalid: hidden from default search, still returned by get")
    async def test_s3_superseded_record_leaves_default_search_but_stays_readable(
        self, store: MemoryStore
    ) -> None:
        old = await write_one(store, "meeting room alpha")
        new = await write_one(store, "meeting room bravo", supersedes=old.id)
        assert await search_ids(store) == [new.id]
        assert await search_ids(store, "meeting room") == [new.id]
        assert set(await search_ids(store, include_invalidated=True)) == {old.id, new.id}
        assert await store.get(old.id) is not None

    @kit_test("raise MemoryNotFoundError(target) before writing anything")
    async def test_s3_supersede_of_a_missing_record_is_not_found_and_writes_nothing(
        self, store: MemoryStore
    ) -> None:
        await write_one(store, "bystander record")
        before = await every_record(store)
        with pytest.raises(MemoryNotFoundError) as caught:
            await write_one(store, "orphan correction", supersedes="missing-record-id")
        assert caught.value.record_id == "missing-record-id"
        assert await every_record(store) == before

    @kit_test("an id no record can have (NUL) is missing: MemoryNotFoundError, no database error")
    async def test_s3_supersede_of_an_id_no_record_can_have_is_not_found(
        self, store: MemoryStore
    ) -> None:
        record = await write_one(store, "bystander record")
        with pytest.raises(MemoryNotFoundError) as caught:
            await write_one(store, "correction", supersedes=record.id + "\x00")
        assert caught.value.record_id == record.id + "\x00"
        assert await every_record(store) == [record]

    @kit_test("a deleted record is missing: MemoryNotFoundError")
    async def test_s3_supersede_of_a_deleted_record_is_not_found(self, store: MemoryStore) -> None:
        gone = await write_one(store, "soon forgotten")
        await store.delete(gone.id)
        with pytest.raises(MemoryNotFoundError):
            await write_one(store, "correction of nothing", supersedes=gone.id)
        assert await every_record(store) == []

    @kit_test(
        "raise MemoryConflictError(target) when the target is already invalid, before writing "
        "anything"
    )
    async def test_s3_supersede_of_an_invalidated_record_is_a_conflict_and_writes_nothing(
        self, store: MemoryStore
    ) -> None:
        old = await write_one(store, "invalidated already")
        await store.invalidate(old.id, "wrong")
        before = await every_record(store)
        with pytest.raises(MemoryConflictError) as caught:
            await write_one(store, "late correction", supersedes=old.id)
        assert caught.value.record_id == old.id
        assert await every_record(store) == before

    @kit_test("a superseded target is invalid: MemoryConflictError, and its superseded_by stays")
    async def test_s3_supersede_of_a_superseded_record_is_a_conflict_and_the_chain_does_not_fork(
        self, store: MemoryStore
    ) -> None:
        old = await write_one(store, "version one")
        winner = await write_one(store, "version two", supersedes=old.id)
        before = await every_record(store)
        with pytest.raises(MemoryConflictError):
            await write_one(store, "competing version two", supersedes=old.id)
        assert await every_record(store) == before
        replaced = await store.get(old.id)
        assert replaced is not None
        assert replaced.superseded_by == winner.id

    @kit_test("each superseded record points to its successor through superseded_by")
    async def test_s3_chain_leads_to_the_current_record(self, store: MemoryStore) -> None:
        first = await write_one(store, "address one")
        second = await write_one(store, "address two", supersedes=first.id)
        third = await write_one(store, "address three", supersedes=second.id)
        chain = [await store.get(record_id) for record_id in ids([first, second, third])]
        assert [record.superseded_by if record else "?" for record in chain] == [
            second.id,
            third.id,
            None,
        ]
        assert await search_ids(store) == [third.id]

    @kit_test("apply every supersedes of a batch, each at its own new record's created_at")
    async def test_s3_batch_may_supersede_several_records_at_once(self, store: MemoryStore) -> None:
        left = await write_one(store, "left version one")
        right = await write_one(store, "right version one")
        new_left, new_right = await store.write(
            [
                memory("left version two", supersedes=left.id),
                memory("right two", supersedes=right.id),
            ]
        )
        for old, new in ((left, new_left), (right, new_right)):
            replaced = await store.get(old.id)
            assert replaced is not None
            assert replaced.superseded_by == new.id
            assert replaced.invalid_at == new.created_at
