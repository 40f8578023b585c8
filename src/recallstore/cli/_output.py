"""How commands show records in a terminal: columns, times, safe text."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo

from recallstore._unicode import is_hidden
from recallstore.records import MemoryRecord
from recallstore.scope_text import format_scope
from recallstore.store import utc_now

__all__ = [
    "count_records",
    "local_time",
    "one_line",
    "printable",
    "said_columns",
    "scope_column",
    "short_time",
    "status_at",
    "status_of",
]


def count_records(count: int) -> str:
    """``1 record``, ``2 records``."""
    return f"{count} record" if count == 1 else f"{count} records"


def scope_column(scope: Mapping[str, str]) -> str:
    """The scope as :func:`~recallstore.scope_text.format_scope` writes it; ``-`` when empty."""
    return format_scope(scope) or "-"


def status_of(record: MemoryRecord) -> str:
    """``valid``, ``superseded``, ``invalidated`` or ``expired``, as a list column shows it."""
    return record.status(utc_now())


def status_at(record: MemoryRecord, moment: datetime) -> str:
    """:func:`status_of` as it stood at ``moment`` (``--as-of``): invalidated or
    superseded only when that happened by then, expired when ``expires_at <= moment``."""
    if record.invalid_at is not None and record.invalid_at <= moment:
        return "superseded" if record.superseded_by is not None else "invalidated"
    return "expired" if record.is_expired(moment) else "valid"


def local_time(moment: datetime, zone: tzinfo | None = None) -> datetime:
    """``moment`` in ``zone`` (UTC when None); in UTC when the zone's clock would read
    past the year 9999 (the last hours of the calendar, east of UTC)."""
    try:
        return moment.astimezone(zone or UTC)
    except OverflowError:
        return moment.astimezone(UTC)


def short_time(record: MemoryRecord, zone: tzinfo | None = None) -> str:
    """When the thing was said (``observed_at``) to the second, in ``zone`` (UTC when
    None), as ``2026-11-29 19:04:05``."""
    return local_time(record.observed_at, zone).strftime("%Y-%m-%d %H:%M:%S")


def said_columns(record: MemoryRecord, zone: tzinfo | None = None) -> str:
    """The ``SAID`` and ``SAVED`` columns: when the thing was said, to the second, and
    the day it was saved when that is another day (blank otherwise), in ``zone``."""
    said = short_time(record, zone)
    saved = local_time(record.created_at, zone).strftime("%Y-%m-%d")
    return f"{said}  {'' if said.startswith(saved) else saved:<10}"


# C0 controls but tab and newline, DEL and C1: in a terminal they are commands (clear
# the screen, set the title, hide text), and memory text comes from a model.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with terminal control characters shown as ``\\x1b``-style escapes, and
    invisible ones (variation selectors, tag letters, zero-width spaces) as ``\\ufe0f``."""
    text = _CONTROL_CHARACTERS.sub(lambda found: f"\\x{ord(found.group()):02x}", text)
    return "".join(ascii(ch)[1:-1] if is_hidden(ch) else ch for ch in text)


def one_line(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
