"""S5 (``delete`` is true forgetting), S6 (``get`` returns any stored record), closed stores."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from recallstore.errors import MemoryNotFoundError, StoreUnavailableError
from recallstore.records import MemorySearchQuery, MemoryTarget, Provenance
from recallstore.store import MemoryStore
from recallstore.testing._harness import (
    StoreFactory,
    StoreHarness,
    every_record,
    hours_from_now,
    memory,
    search_ids,
    write_one,
)
from recallstore.testing._rules import kit_test

__all__ = ["ClosedStoreConformance", "DeleteGetConformance"]

_UNKNOWN_IDS = [
    pytest.param("no-such-record", id="plain"),
    pytest.param("", id="empty"),
    pytest.param("' OR '1'='1", id="sql-quote"),
    pytest.param("%", id="like-wildcard"),
    pytest.param("_" * 26, id="like-underscores"),
    pytest.param("*", id="star"),
    pytest.param("a\x00b", id="nul"),
    pytest.param("a\ud800b", id="lone-surrogate"),
    pytest.param("x" * 5000, id="very-long"),
    pytest.param("记忆🙂", id="cjk-emoji"),
]


class DeleteGetConformance(StoreHarness):
    """Deleting forgets a record and its index entries; ``get`` ignores validity and expiry."""

    @kit_test("delete must remove the stored record so get() answers None")
    async def test_s5_deleted_record_is_gone_from_get(self, store: MemoryStore) -> None:
        record = await write_one(store, "forget me")
        await store.delete(record.id)
        assert await store.get(record.id) is None

    @kit_test("delete must remove the record from everything search reads, listings included")
    async def test_s5_deleted_record_is_never_returned_by_search(self, store: MemoryStore) -> None:
        record = await write_one(store, "zeppelin sighting report")
        await store.invalidate(record.id)
        await store.delete(record.id)
        everything: dict[str, Any] = {"include_invalidated": True, "include_expired": True}
        assert await search_ids(store, None, **everything) == []
        assert await search_ids(store, "zeppelin", **everything) == []

    @kit_test("delete must remove the record's words from the keyword index too")
    async def test_s5_deleted_content_leaves_the_keyword_index(
        self, keyword_store: MemoryStore
    ) -> None:
        forgotten = await write_one(keyword_store, "walrus tusk measurement")
        await write_one(keyword_store, "unrelated garden note")
        await keyword_store.delete(forgotten.id)
        assert await search_ids(keyword_store, "walrus") == []
        again = await write_one(keyword_store, "walrus spotted again")
        assert await search_ids(keyword_store, "walrus tusk") == [again.id]

    @kit_test("delete of an unknown id must return quietly")
    async def test_s5_delete_of_a_missing_record_is_not_an_error(self, store: MemoryStore) -> None:
        record = await write_one(store, "deleted twice")
        await store.delete("no-such-record")
        await store.delete(record.id)
        await store.delete(record.id)
        assert await every_record(store) == []

    @kit_test("delete must remove only the record with that id")
    async def test_s5_delete_removes_only_that_record(self, store: MemoryStore) -> None:
        doomed, kept = await store.write([memory("doomed record"), memory("kept record")])
        await store.delete(doomed.id)
        assert await store.get(kept.id) == kept
        assert await search_ids(store) == [kept.id]
        assert await search_ids(store, "record") == [kept.id]

    @kit_test("deleting the old end of a chain must not touch its successor")
    async def test_s5_deleting_a_superseded_record_keeps_its_successor(
        self, store: MemoryStore
    ) -> None:
        old = await write_one(store, "old value")
        new = await write_one(store, "new value", supersedes=old.id)
        await store.delete(old.id)
        assert await store.get(old.id) is None
        assert await store.get(new.id) == new
        assert await search_ids(store, include_invalidated=True) == [new.id]

    @kit_test(
        "store and return every field unchanged (scope keys sorted, tags normalised, payloads as "
        "JSON)"
    )
    async def test_s6_get_returns_every_field_as_written(self, store: MemoryStore) -> None:
        written = await write_one(
            store,
            "Prefers window seats 🪟 — «always», 東京 flights",
            scope={"user": "u-1", "tenant": "acme", "région": "Île-de-France"},
            kind="preference",
            tags=["travel", " seats ", "travel"],
            provenance=Provenance(conversation_id="c-1", run_id="r-1", author="agent"),
            expires_at=hours_from_now(24 * 365),
            target=MemoryTarget(section="preferences", key="seat"),
            payload={"seat": "window", "rank": [1, 2.5, None, True], "nested": {"a": "b"}},
            supports=(Provenance(conversation_id="c-0"), Provenance(author="user")),
        )
        assert written.tags == ("seats", "travel")
        assert list(written.scope) == sorted(written.scope)
        assert await store.get(written.id) == written
        assert await every_record(store) == [written]

    @kit_test("get must ignore validity and expiry")
    async def test_s6_get_returns_invalidated_superseded_and_expired_records(
        self, store: MemoryStore
    ) -> None:
        invalidated = await write_one(store, "invalidated record")
        await store.invalidate(invalidated.id, "no longer true")
        superseded = await write_one(store, "superseded record")
        await write_one(store, "successor record", supersedes=superseded.id)
        expired = await write_one(store, "expired record", expires_at=hours_from_now(-1))
        for record in (invalidated, superseded, expired):
            stored = await store.get(record.id)
            assert stored is not None
            assert stored.content == record.content
        assert await store.get(expired.id) == expired

    @kit_test("get of an id the store does not hold (even an odd one) returns None without raising")
    @pytest.mark.parametrize("unknown_id", _UNKNOWN_IDS)
    async def test_s6_get_of_an_unknown_id_returns_none(
        self, store: MemoryStore, unknown_id: str
    ) -> None:
        await write_one(store, "some record")
        assert await store.get(unknown_id) is None

    @kit_test(
        "odd ids (empty, quotes, wildcards, NUL) name no record: invalidate raises "
        "MemoryNotFoundError, delete returns"
    )
    @pytest.mark.parametrize("unknown_id", _UNKNOWN_IDS)
    async def test_s5_unknown_ids_are_not_found_by_invalidate_and_ignored_by_delete(
        self, store: MemoryStore, unknown_id: str
    ) -> None:
        record = await write_one(store, "some record")
        with pytest.raises(MemoryNotFoundError) as caught:
            await store.invalidate(unknown_id, "gone")
        assert caught.value.record_id == unknown_id
        await store.delete(unknown_id)
        assert await every_record(store) == [record]


class ClosedStoreConformance(StoreHarness):
    """A store is an async context manager; a closed store refuses every call."""

    @kit_test(
        "after __aexit__ / close, every protocol method must raise StoreUnavailableError "
        "(not AttributeError, not a driver error, and never succeed)"
    )
    async def test_lifecycle_closed_store_raises_store_unavailable(
        self, store_factory: StoreFactory
    ) -> None:
        store = store_factory()
        async with store:
            record = await write_one(store, "written before closing")
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "write": lambda: store.write([memory("written after closing")]),
            "search": lambda: store.search(MemorySearchQuery(query="written")),
            "listing": lambda: store.search(MemorySearchQuery()),
            "get": lambda: store.get(record.id),
            "invalidate": lambda: store.invalidate(record.id, "after closing"),
            "delete": lambda: store.delete(record.id),
        }
        for name, call in calls.items():
            try:
                await call()
            except StoreUnavailableError:
                continue
            pytest.fail(f"{name}() on a closed store returned instead of raising")
