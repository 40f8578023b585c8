"""Time edges, pinned with a frozen clock: expiry at exactly ``expires_at``, stamps from the clock.

Runs when the test class overrides ``clocked_store_factory`` to return
``lambda clock: YourStore(..., clock=clock)`` (a ``recallstore.store.Clock``: a
callable returning the current UTC time); skipped otherwise. The bundled backends
all take ``clock=``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from recallstore.testing._harness import (
    ClockedStoreFactory,
    StoreHarness,
    every_record,
    ids,
    memory,
    search_ids,
)
from recallstore.testing._rules import kit_test

__all__ = ["ClockConformance"]

_FROZEN = datetime(2031, 5, 17, 9, 30, 0, 123456, tzinfo=UTC)


def _clocked(factory: ClockedStoreFactory | None) -> ClockedStoreFactory:
    if factory is None:
        pytest.skip("clock rule; override clocked_store_factory to run it")
    return factory


class ClockConformance(StoreHarness):
    """Sub-suite for stores that read the time from a ``clock`` they are given."""

    @kit_test(
        "a record is expired when expires_at <= now: compare with <=, not <, against the "
        "store's clock"
    )
    async def test_s9_a_record_expires_at_exactly_its_expires_at(
        self, clocked_store_factory: ClockedStoreFactory | None
    ) -> None:
        factory = _clocked(clocked_store_factory)
        async with factory(lambda: _FROZEN) as store:
            at_now, just_after, earlier = await store.write(
                [
                    memory("expires exactly now", expires_at=_FROZEN),
                    memory("expires a microsecond later", expires_at=_FROZEN + timedelta(0, 0, 1)),
                    memory("expired a microsecond ago", expires_at=_FROZEN - timedelta(0, 0, 1)),
                ]
            )
            assert await search_ids(store) == [just_after.id]
            assert await search_ids(store, "expires") == [just_after.id]
            everything = await search_ids(store, include_expired=True)
            assert set(everything) == {at_now.id, just_after.id, earlier.id}

    @kit_test(
        "stamp created_at from the clock the store was given, each record of a batch "
        "strictly after the previous (MonotonicClock)"
    )
    async def test_s2_stamps_come_from_the_stores_clock(
        self, clocked_store_factory: ClockedStoreFactory | None
    ) -> None:
        factory = _clocked(clocked_store_factory)
        async with factory(lambda: _FROZEN) as store:
            records = await store.write([memory(f"frozen {n}") for n in range(3)])
            stamps = [record.created_at for record in records]
            assert stamps[0] >= _FROZEN
            assert stamps[-1] - _FROZEN < timedelta(seconds=1)
            assert len(set(stamps)) == 3
            assert stamps == sorted(stamps)
            assert ids(await every_record(store)) == ids(reversed(records))
            await store.invalidate(records[0].id)
            invalid = await store.get(records[0].id)
            assert invalid is not None
            assert invalid.invalid_at is not None
            assert invalid.invalid_at > stamps[-1]
            assert invalid.invalid_at - _FROZEN < timedelta(seconds=1)
