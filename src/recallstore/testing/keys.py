"""Keys: idempotent writes by ``idempotency_key`` (S16) and the ``target_key`` filter (S8).

The S16 tests run on stores whose ``capabilities().extensions`` declare
``"idempotency"``; the ``target_key`` filter is for every store.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from recallstore.errors import MemoryConflictError, MemoryValidationError
from recallstore.records import MemorySearchQuery, MemoryTarget
from recallstore.store import (
    IDEMPOTENCY_EXTENSION,
    IMPORT_EXTENSION,
    MemoryStore,
    SupportsImportRecords,
)
from recallstore.testing._harness import (
    StoreHarness,
    every_record,
    ids,
    memory,
    search_ids,
    write_one,
)
from recallstore.testing._rules import kit_test

__all__ = ["KeyConformance"]

_SCOPE = {"tenant": "acme", "user": "ana"}
_KEYED: dict[str, Any] = {"scope": _SCOPE, "idempotency_key": "e1"}


class KeyConformance(StoreHarness):
    """One valid record per (scope, idempotency key), even under races; lookup by target key."""

    @pytest.fixture
    def idempotent_store(self, store: MemoryStore) -> MemoryStore:
        """The opened store; skips unless it declares the ``"idempotency"`` extension."""
        if IDEMPOTENCY_EXTENSION not in store.capabilities().extensions:
            pytest.skip("idempotency sub-suite; this store lacks the 'idempotency' extension")
        return store

    @kit_test(
        "a write whose key a valid record of the scope holds with the same content must "
        "return that record and store nothing"
    )
    async def test_s16_rewriting_a_key_with_the_same_content_returns_the_stored_record(
        self, idempotent_store: MemoryStore
    ) -> None:
        store = idempotent_store
        first = await write_one(store, "Ana likes tea", **_KEYED)
        assert first.idempotency_key == "e1"
        for _ in range(4):
            (again,) = await store.write([memory("Ana likes tea", **_KEYED)])
            assert again == first
        assert ids(await every_record(store)) == [first.id]

    @kit_test(
        "a write whose key a valid record holds with other content must supersede it "
        "(superseded_by, invalid_at) and carry the key on"
    )
    async def test_s16_rewriting_a_key_with_new_content_supersedes_the_holder(
        self, idempotent_store: MemoryStore
    ) -> None:
        store = idempotent_store
        first = await write_one(store, "Ana likes tea", **_KEYED)
        second = await write_one(store, "Ana likes coffee", **_KEYED)
        assert second.id != first.id
        replaced = await store.get(first.id)
        assert replaced is not None
        assert replaced.superseded_by == second.id
        assert replaced.invalid_at == second.created_at
        assert await search_ids(store, scope=_SCOPE) == [second.id]
        (third,) = await store.write([memory("Ana likes coffee", **_KEYED)])
        assert third == second

    @kit_test(
        "the key must be unique per exact scope: the same key in another scope (even a "
        "wider or narrower one) is another record"
    )
    async def test_s16_keys_are_per_exact_scope(self, idempotent_store: MemoryStore) -> None:
        store = idempotent_store
        scopes = [_SCOPE, {"tenant": "acme"}, {"tenant": "acme", "user": "bo"}]
        written = [
            await write_one(store, "same words", scope=scope, idempotency_key="k")
            for scope in scopes
        ]
        assert len(set(ids(written))) == 3
        assert all(not record.is_invalidated for record in await every_record(store))

    @kit_test("an invalidated record must free its key: the next write creates a new record")
    async def test_s16_an_invalidated_record_frees_its_key(
        self, idempotent_store: MemoryStore
    ) -> None:
        store = idempotent_store
        first = await write_one(store, "Ana likes tea", **_KEYED)
        await store.invalidate(first.id, "wrong")
        second = await write_one(store, "Ana likes tea", **_KEYED)
        assert second.id != first.id
        stored = await store.get(first.id)
        assert stored is not None
        assert stored.superseded_by is None
        assert stored.invalid_reason == "wrong"

    @kit_test("one key twice in a batch must be a MemoryValidationError, and nothing written")
    async def test_s16_a_key_repeated_in_one_batch_is_refused(
        self, idempotent_store: MemoryStore
    ) -> None:
        store = idempotent_store
        with pytest.raises(MemoryValidationError) as caught:
            await store.write(
                [
                    memory("one", scope=_SCOPE),
                    memory("two", scope=_SCOPE, idempotency_key="k"),
                    memory("three", scope=_SCOPE, idempotency_key="k"),
                ]
            )
        assert caught.value.field == "inputs[2].idempotency_key"
        assert await every_record(store) == []

    @kit_test(
        "supersedes naming another record than the key's holder must be a "
        "MemoryConflictError, and nothing written"
    )
    async def test_s16_supersedes_disagreeing_with_the_key_is_a_conflict(
        self, idempotent_store: MemoryStore
    ) -> None:
        store = idempotent_store
        holder = await write_one(store, "Ana likes tea", **_KEYED)
        other = await write_one(store, "Ana has a cat", scope=_SCOPE)
        with pytest.raises(MemoryConflictError):
            await store.write(
                [memory("Ana likes juice", scope=_SCOPE, idempotency_key="e1", supersedes=other.id)]
            )
        assert sorted(ids(await every_record(store))) == sorted([holder.id, other.id])
        assert all(not record.is_invalidated for record in await every_record(store))

    @kit_test(
        "check the key and insert under one lock or transaction (or a unique index): "
        "racing writers of one key must store one record"
    )
    async def test_s16_concurrent_writes_of_one_key_store_one_record(
        self, idempotent_store: MemoryStore
    ) -> None:
        store = idempotent_store
        results = await asyncio.gather(
            *(store.write([memory("Ana likes tea", **_KEYED)]) for _ in range(10))
        )
        assert len({batch[0].id for batch in results}) == 1
        assert len(await every_record(store)) == 1

    @kit_test(
        "racing writers of one key with different content must leave exactly one valid "
        "record, every other one superseded (a chain, never a fork)"
    )
    async def test_s16_concurrent_changes_of_one_key_never_fork(
        self, idempotent_store: MemoryStore
    ) -> None:
        store = idempotent_store
        await asyncio.gather(*(store.write([memory(f"version {n}", **_KEYED)]) for n in range(8)))
        records = await every_record(store)
        assert len(records) == 8
        valid = [record for record in records if not record.is_invalidated]
        assert len(valid) == 1
        successors = [record.superseded_by for record in records if record.is_invalidated]
        assert len(set(successors)) == 7  # each record replaced by a different one

    @kit_test(
        "import_records must refuse a valid record whose key another valid record "
        "holds (MemoryConflictError, nothing written)"
    )
    async def test_s16_an_import_cannot_take_a_held_key(
        self, idempotent_store: MemoryStore
    ) -> None:
        store = idempotent_store
        if IMPORT_EXTENSION not in store.capabilities().extensions:
            pytest.skip("needs the 'import' extension")
        importer = cast(SupportsImportRecords, store)
        holder = await write_one(store, "Ana likes tea", **_KEYED)
        rival = holder.model_copy(update={"id": "rival-record", "content": "Ana likes juice"})
        with pytest.raises(MemoryConflictError):
            await importer.import_records([rival])
        twins = [
            rival.model_copy(update={"id": f"twin-{n}", "scope": {"user": "bo"}}) for n in (1, 2)
        ]
        with pytest.raises(MemoryConflictError):
            await importer.import_records(twins)
        assert ids(await every_record(store)) == [holder.id]
        assert await importer.import_records([holder]) == 0  # the holder itself: skipped

    @kit_test("target_key must match record.target.key exactly, with every other filter")
    async def test_s8_target_key_filters_on_the_target_key(self, store: MemoryStore) -> None:
        notes = MemoryTarget(section="files", key="/memories/notes.md")
        other = MemoryTarget(section="files", key="/memories/notes.md.bak")
        match = await write_one(store, "notes about tea", scope=_SCOPE, target=notes)
        await write_one(store, "backup about tea", scope=_SCOPE, target=other)
        await write_one(store, "no target about tea", scope=_SCOPE)
        await write_one(store, "untargeted", scope=_SCOPE, target=MemoryTarget(section="files"))
        elsewhere = await write_one(store, "tea elsewhere", scope={"user": "bo"}, target=notes)
        assert await search_ids(store, target_key=notes.key) == [elsewhere.id, match.id]
        assert await search_ids(store, target_key=notes.key, scope=_SCOPE) == [match.id]
        assert await search_ids(store, "tea", target_key=notes.key, scope=_SCOPE) == [match.id]
        assert await search_ids(store, target_key="/memories") == []
        replaced = await write_one(
            store, "new notes", scope=_SCOPE, target=notes, supersedes=match.id
        )
        assert await search_ids(store, target_key=notes.key, scope=_SCOPE) == [replaced.id]
        assert await search_ids(
            store, target_key=notes.key, scope=_SCOPE, include_invalidated=True
        ) == [replaced.id, match.id]

    @kit_test("an empty idempotency_key or target_key must be a MemoryValidationError")
    async def test_s14_empty_keys_are_refused(self, store: MemoryStore) -> None:
        with pytest.raises(MemoryValidationError) as caught:
            memory("x", idempotency_key="")
        assert caught.value.field == "idempotency_key"
        with pytest.raises(MemoryValidationError) as caught:
            MemorySearchQuery(target_key="")
        assert caught.value.field == "target_key"
