"""The clock events are stamped with (UTC, timezone-aware).

Events keep their own clock so the events layer does not reach into ``store.py`` for
the time of day.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["utc_now"]


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)
