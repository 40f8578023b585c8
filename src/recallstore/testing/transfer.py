"""Import/export sub-suite: lossless moves of records between stores.

Runs on stores whose ``capabilities().extensions`` declare both ``"import"`` and
``"export"`` (:class:`~recallstore.store.SupportsImportRecords` and
:class:`~recallstore.store.SupportsExportRecords`); skipped otherwise.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

import pytest

from recallstore.errors import MemoryConflictError, MemoryValidationError
from recallstore.records import MemoryRecord, MemoryTarget, Provenance
from recallstore.store import (
    EXPORT_EXTENSION,
    IMPORT_EXTENSION,
    MemoryStore,
    SupportsExportRecords,
    SupportsImportRecords,
)
from recallstore.testing._harness import (
    StoreHarness,
    every_record,
    hours_from_now,
    ids,
    search_ids,
    write_one,
)
from recallstore.testing._rules import kit_test


class _TransferStore(SupportsImportRecords, SupportsExportRecords, MemoryStore):
    """For type checkers only: a store with both extensions."""


async def _export(store: Any, scope: dict[str, str] | None = None) -> list[MemoryRecord]:
    return [record async for record in cast(SupportsExportRecords, store).export_records(scope)]


async def _varied_records(store: MemoryStore) -> list[MemoryRecord]:
    """Records exercising every field: a chain, an invalidation, expiry, payloads."""
    first = await write_one(
        store,
        "Ana drinks green tea",
        scope={"tenant": "acme", "user": "ana"},
        kind="preference",
        tags=["drinks"],
        provenance=Provenance(conversation_id="c1", run_id="r1", author="agent"),
        payload={"drink": "tea", "colour": ["green"], "strength": None},
        target=MemoryTarget(section="background", key="drinks"),
        supports=(Provenance(conversation_id="c0"),),
    )
    await write_one(
        store,
        "Ana drinks black tea",
        scope={"tenant": "acme", "user": "ana"},
        kind="preference",
        supersedes=first.id,
    )
    gone = await write_one(store, "Acme's office is in Lyon", scope={"tenant": "acme"})
    await store.invalidate(gone.id, "the office moved")
    await write_one(
        store, "A summit is booked", scope={"tenant": "acme"}, expires_at=hours_from_now(-1)
    )
    await write_one(store, "Bo keeps bees", scope={"tenant": "zeta", "user": "bo"})
    return await _export(store)


class TransferConformance(StoreHarness):
    """``import_records`` / ``export_records``: exact, atomic, idempotent round trips."""

    @pytest.fixture
    def transfer_store(self, store: MemoryStore) -> MemoryStore:
        """The opened store; skips unless it declares the import and export extensions."""
        extensions = store.capabilities().extensions
        if not {IMPORT_EXTENSION, EXPORT_EXTENSION} <= extensions:
            pytest.skip("import/export sub-suite; this store lacks those extensions")
        return store

    @kit_test(
        "import_records must insert records exactly as given (ids, stamps, chains) and index them"
    )
    async def test_ext_export_then_import_into_an_empty_store_is_lossless(
        self, transfer_store: MemoryStore
    ) -> None:
        store = cast(_TransferStore, transfer_store)
        exported = await _varied_records(store)
        assert ids(exported) == ids(sorted(exported, key=lambda r: (r.created_at, r.id)))
        for record in exported:
            await store.delete(record.id)
        assert await every_record(store) == []

        assert await store.import_records(exported) == len(exported)

        for record in exported:
            assert await store.get(record.id) == record
        assert await _export(store) == exported
        # Imported records are indexed and filtered exactly as written ones.
        (current,) = [r for r in exported if r.content == "Ana drinks black tea"]
        assert await search_ids(store, "tea", scope={"user": "ana"}) == [current.id]
        assert await search_ids(store, "office", scope={"tenant": "acme"}) == []

    @kit_test("export_records filters by scope subset and orders by (created_at, id) ascending")
    async def test_ext_export_filters_by_scope_subset_oldest_first(
        self, transfer_store: MemoryStore
    ) -> None:
        exported = await _varied_records(transfer_store)
        acme = [r for r in exported if r.scope.get("tenant") == "acme"]
        assert await _export(transfer_store, {"tenant": "acme"}) == acme
        assert await _export(transfer_store, {"user": "nobody"}) == []

    @kit_test(
        "compare with records_to_import before inserting; a conflict writes none of the batch"
    )
    async def test_ext_import_skips_identical_records_and_refuses_different_ones_atomically(
        self, transfer_store: MemoryStore
    ) -> None:
        store = cast(_TransferStore, transfer_store)
        existing = await write_one(store, "Cy plays the cello", scope={"user": "cy"})
        newcomer = existing.model_copy(update={"id": existing.id + "x", "content": "Cy sings"})

        assert await store.import_records([existing]) == 0
        changed = existing.model_copy(update={"content": "Cy plays the viola"})
        with pytest.raises(MemoryConflictError):
            await store.import_records([newcomer, changed])

        assert await store.get(newcomer.id) is None
        assert await store.get(existing.id) == existing

    @kit_test("call check_import_batch(records) before any I/O")
    async def test_ext_import_refuses_inconsistent_batches_before_writing(
        self, transfer_store: MemoryStore
    ) -> None:
        store = cast(_TransferStore, transfer_store)
        template = await write_one(store, "Di rides a bike", scope={"user": "di"})
        await store.delete(template.id)
        a = template.model_copy(update={"id": "import-a"})
        bad_batches = {
            "records[1].id": [a, a],
            "records[1].invalid_at": [a, template.model_copy(update={"superseded_by": "import-a"})],
            "records[0].updated_at": [
                template.model_copy(update={"updated_at": template.created_at - timedelta(1)})
            ],
        }
        for field, batch in bad_batches.items():
            with pytest.raises(MemoryValidationError) as caught:
                await store.import_records(batch)
            assert caught.value.field == field
        assert await every_record(store) == []

    @kit_test(
        "after an import, MonotonicClock.observe(newest_timestamp(records)) so later writes sort "
        "after it"
    )
    async def test_ext_writes_after_an_import_sort_after_the_imported_records(
        self, transfer_store: MemoryStore
    ) -> None:
        store = cast(_TransferStore, transfer_store)
        template = await write_one(store, "Ed plants tulips", scope={"user": "ed"})
        await store.delete(template.id)
        later = template.created_at + timedelta(minutes=10)
        future = template.model_copy(update={"created_at": later, "updated_at": later})
        await store.import_records([future])

        written = await write_one(store, "Ed plants roses", scope={"user": "ed"})

        assert written.created_at > future.created_at
        assert await search_ids(store, scope={"user": "ed"}) == [written.id, future.id]
