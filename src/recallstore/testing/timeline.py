"""S19 (when a memory was observed, and the observed window) and S20 (``as_of``: the
store as it stood at an instant, the audit trail made queryable)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from recallstore.errors import MemoryValidationError
from recallstore.store import MemoryStore
from recallstore.testing._harness import (
    StoreHarness,
    every_record,
    hours_from_now,
    memory,
    search_ids,
    write_one,
)
from recallstore.testing._rules import kit_test

__all__ = ["TimeConformance"]

_LISTING_AND_QUERY = pytest.mark.parametrize("query", [None, "kettle"], ids=["listing", "query"])
_MONDAY = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
_DAY = timedelta(days=1)
_MICROSECOND = timedelta(microseconds=1)


class TimeConformance(StoreHarness):
    """``observed_at`` on records, the observed window and ``as_of`` on searches."""

    @kit_test("store observed_at as given, and default it to created_at when the input has none")
    async def test_s19_observed_at_is_kept_and_defaults_to_created_at(
        self, store: MemoryStore
    ) -> None:
        plain, dated = await store.write(
            [memory("kettle said today"), memory("kettle said on monday", observed_at=_MONDAY)]
        )
        assert plain.observed_at == plain.created_at
        assert dated.observed_at == _MONDAY
        assert dated.created_at > _MONDAY
        assert await store.get(plain.id) == plain
        assert await store.get(dated.id) == dated

    @kit_test(
        "the window is half-open: observed_after <= observed_at < observed_before (a record "
        "observed exactly at observed_before is outside)"
    )
    @_LISTING_AND_QUERY
    async def test_s19_observed_window_is_half_open(
        self, store: MemoryStore, query: str | None
    ) -> None:
        monday, tuesday, wednesday = await store.write(
            [
                memory("kettle monday", observed_at=_MONDAY),
                memory("kettle tuesday", observed_at=_MONDAY + _DAY),
                memory("kettle wednesday", observed_at=_MONDAY + 2 * _DAY),
            ]
        )
        tuesday_at = _MONDAY + _DAY
        assert await search_ids(store, query, observed_before=tuesday_at) == [monday.id]
        after = await search_ids(store, query, observed_after=tuesday_at)
        assert set(after) == {tuesday.id, wednesday.id}
        just_after = await search_ids(store, query, observed_after=tuesday_at + _MICROSECOND)
        assert just_after == [wednesday.id]
        window = await search_ids(
            store, query, observed_after=tuesday_at, observed_before=tuesday_at + _DAY
        )
        assert window == [tuesday.id]

    @kit_test(
        "the window filters on observed_at (when it was said), not on created_at (when it "
        "was saved)"
    )
    @_LISTING_AND_QUERY
    async def test_s19_window_filters_on_observed_at_not_created_at(
        self, store: MemoryStore, query: str | None
    ) -> None:
        old, new = await store.write(
            [memory("kettle imported", observed_at=_MONDAY), memory("kettle saved now")]
        )
        last_week = await search_ids(
            store, query, observed_after=_MONDAY - _DAY, observed_before=_MONDAY + _DAY
        )
        assert last_week == [old.id]
        recent = await search_ids(store, query, observed_after=new.created_at - timedelta(hours=1))
        assert recent == [new.id]

    @kit_test("the window narrows a scoped search, and never reaches outside the scope")
    @_LISTING_AND_QUERY
    async def test_s19_window_stays_within_the_scope(
        self, store: MemoryStore, query: str | None
    ) -> None:
        mine, _theirs = await store.write(
            [
                memory("kettle mine", scope={"user": "u1"}, observed_at=_MONDAY),
                memory("kettle theirs", scope={"user": "u2"}, observed_at=_MONDAY),
            ]
        )
        found = await search_ids(
            store,
            query,
            scope={"user": "u1"},
            observed_after=_MONDAY,
            observed_before=_MONDAY + _DAY,
        )
        assert found == [mine.id]

    @kit_test(
        "an observed_at more than MAX_OBSERVED_SKEW after the store's clock is a "
        "MemoryValidationError on observed_at (record_from_input checks it), and nothing "
        "of the batch is written"
    )
    async def test_s19_an_observed_time_in_the_future_is_refused(self, store: MemoryStore) -> None:
        with pytest.raises(MemoryValidationError) as refused:
            await store.write(
                [memory("kettle fine"), memory("kettle tomorrow", observed_at=hours_from_now(24))]
            )
        assert refused.value.field.endswith("observed_at"), refused.value.field
        assert await every_record(store) == []

    @kit_test(
        "as_of=T returns what was valid at T: created by T, not invalidated or superseded "
        "at or before T (invalid_at > T), judged at T rather than now"
    )
    @_LISTING_AND_QUERY
    async def test_s20_as_of_shows_what_was_valid_then(
        self, store: MemoryStore, query: str | None
    ) -> None:
        first = await write_one(store, "kettle is blue")
        (second,) = await store.write([memory("kettle is red", supersedes=first.id)])
        third = await write_one(store, "kettle is on the shelf")
        await store.invalidate(third.id, "moved")
        invalidated = await store.get(third.id)
        assert invalidated is not None
        assert invalidated.invalid_at is not None
        assert await search_ids(store, query, as_of=first.created_at - _MICROSECOND) == []
        assert await search_ids(store, query, as_of=first.created_at) == [first.id]
        # Superseded at the successor's created_at: from then on the successor stands.
        assert await search_ids(store, query, as_of=second.created_at) == [second.id]
        during = await search_ids(store, query, as_of=invalidated.invalid_at - _MICROSECOND)
        assert set(during) == {second.id, third.id}
        assert await search_ids(store, query, as_of=invalidated.invalid_at) == [second.id]
        everything = await search_ids(
            store, query, as_of=invalidated.invalid_at, include_invalidated=True
        )
        assert set(everything) == {first.id, second.id, third.id}

    @kit_test("as_of judges expiry at T: expires_at <= T is expired then, whatever now is")
    @_LISTING_AND_QUERY
    async def test_s20_as_of_judges_expiry_then(
        self, store: MemoryStore, query: str | None
    ) -> None:
        expires = hours_from_now(1)
        fleeting = await write_one(store, "kettle for an hour", expires_at=expires)
        assert await search_ids(store, query, as_of=fleeting.created_at) == [fleeting.id]
        assert await search_ids(store, query, as_of=expires - _MICROSECOND) == [fleeting.id]
        assert await search_ids(store, query, as_of=expires) == []
        kept = await search_ids(store, query, as_of=expires, include_expired=True)
        assert kept == [fleeting.id]

    @kit_test("as_of and the observed window combine (both apply)")
    async def test_s20_as_of_and_the_window_combine(self, store: MemoryStore) -> None:
        old = await write_one(store, "kettle monday", observed_at=_MONDAY)
        await store.invalidate(old.id)
        await write_one(store, "kettle tuesday", observed_at=_MONDAY + _DAY)
        window: dict[str, Any] = {"observed_after": _MONDAY, "observed_before": _MONDAY + _DAY}
        assert await search_ids(store, **window) == []
        assert await search_ids(store, as_of=old.created_at, **window) == [old.id]
