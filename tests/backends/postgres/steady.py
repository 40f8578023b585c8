"""The same ids and clock for stores that must hold equal records (two stores, or a
store and its reference)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


def steady(per_second: int) -> dict[str, Callable[[], object]]:
    """``ids`` and ``clock`` for a store: ids in order, ``per_second`` records a second
    (so times tie, and ids break the ties)."""
    ids = itertools.count()
    ticks = itertools.count()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return {
        "ids": lambda: f"r{next(ids):05d}",
        "clock": lambda: start + timedelta(seconds=next(ticks) // per_second),
    }
