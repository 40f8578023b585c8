"""How commands show records in a terminal: columns, times, safe text."""

from __future__ import annotations

import re
from collections.abc import Mapping

from recallstore._unicode import is_hidden
from recallstore.records import MemoryRecord
from recallstore.scope_text import format_scope
from recallstore.store import utc_now

__all__ = ["count_records", "one_line", "printable", "scope_column", "short_time", "status_of"]


def count_records(count: int) -> str:
    """``1 record``, ``2 records``."""
    return f"{count} record" if count == 1 else f"{count} records"


def scope_column(scope: Mapping[str, str]) -> str:
    """The scope as :func:`~recallstore.scope_text.format_scope` writes it; ``-`` when empty."""
    return format_scope(scope) or "-"


def status_of(record: MemoryRecord) -> str:
    """``valid``, ``superseded``, ``invalidated`` or ``expired``, as a list column shows it."""
    return record.status(utc_now())


def short_time(record: MemoryRecord) -> str:
    """The creation time to the second, as ``2026-11-29 19:04:05``."""
    return record.created_at.strftime("%Y-%m-%d %H:%M:%S")


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
