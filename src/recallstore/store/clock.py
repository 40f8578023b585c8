"""The clock stores stamp records with: UTC, strictly increasing within a process; and
:func:`store_clock`, the "now" a store's callers read time phrases against."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Final

from recallstore.store.protocol import Clock
from recallstore.values import utc_now

_ONE_MICROSECOND: Final = timedelta(microseconds=1)


def store_clock(store: object) -> Clock:
    """The clock ``store`` was given: its ``clock`` attribute when it has a callable one
    (every :class:`~recallstore.backends.BaseMemoryStore`, and the wrappers that pass
    one on), else the wall clock :func:`~recallstore.values.utc_now`.

    The toolbox, the recall and the capability read "last week" against it, so a store
    built with a fixed clock gives one "now" to everything said about it.
    """
    clock = getattr(store, "clock", None)
    return clock if callable(clock) else utc_now


class MonotonicClock:
    """Wraps a clock so successive readings strictly increase (by at least 1 µs).

    Stores stamp ``created_at`` from it, so recency order is total within a process
    even when the wall clock stalls or steps back.
    """

    def __init__(self, clock: Clock = utc_now) -> None:
        self._clock = clock
        self._last: datetime | None = None
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        """The next timestamp, never equal to or before the previous one."""
        return self.readings(1)[0]

    def readings(self, count: int) -> list[datetime]:
        """``count`` successive timestamps from one reading of the clock, 1 µs apart
        (what ``count`` calls in a row give when the clock stands still)."""
        if count <= 0:
            return []
        with self._lock:
            now = self._clock().astimezone(UTC)
            if self._last is not None and now <= self._last:
                now = self._last + _ONE_MICROSECOND
            stamps = [now + offset * _ONE_MICROSECOND for offset in range(count)]
            self._last = stamps[-1]
            return stamps

    def observe(self, moment: datetime | None) -> None:
        """Never hand out a time at or before ``moment`` (e.g. the newest stored record)."""
        if moment is None:
            return
        with self._lock:
            if self._last is None or moment > self._last:
                self._last = moment
