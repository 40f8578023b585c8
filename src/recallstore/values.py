"""The rules every value of the data contract follows, each in one place.

Limits, storable text (no NUL, no lone surrogate), record ids, the canonical scope,
tags, timestamps and how they are written: the contract models validate with these,
and every other layer (stores, tools, the command line) calls the same functions
instead of restating a rule. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from recallstore.errors import MemoryValidationError

__all__ = [
    "DEFAULT_LIMIT",
    "FIRST_YEAR",
    "MAX_CONTENT_CHARS",
    "MAX_ID_CHARS",
    "MAX_KEY_CHARS",
    "MAX_LIMIT",
    "MAX_OBSERVED_SKEW",
    "MAX_REASON_CHARS",
    "MAX_SCOPE_KEYS",
    "MAX_SCOPE_PART_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "RECORD_ID_RULE",
    "canonical_scope",
    "check_invalid_reason",
    "check_storable",
    "check_text",
    "format_timestamp",
    "is_storable",
    "is_valid_record_id",
    "model_date",
    "normalise_tags",
    "parse_scope_pairs",
    "utc_moment",
    "utc_now",
]

MAX_CONTENT_CHARS: Final = 16_000
"""Longest allowed ``content``, in characters, for every backend."""
DEFAULT_LIMIT: Final = 10
"""``MemorySearchQuery.limit`` when none is given."""
MAX_LIMIT: Final = 1000
"""Largest allowed ``MemorySearchQuery.limit``."""
MAX_TAGS: Final = 32
"""Most tags a record may carry."""
MAX_TAG_CHARS: Final = 64
"""Longest allowed tag, in characters."""
MAX_SCOPE_KEYS: Final = 16
"""Most keys a scope may have."""
MAX_SCOPE_PART_CHARS: Final = 256
"""Longest allowed scope key or value, in characters."""
MAX_REASON_CHARS: Final = 1_000
"""Longest allowed invalidation reason, in characters, for every backend."""
MAX_OBSERVED_SKEW: Final = timedelta(minutes=5)
"""How far ``observed_at`` may lie after the moment it is saved (clocks disagree):
further is refused, and a time within it is saved as the save time."""
MAX_ID_CHARS: Final = 128
"""Longest allowed record id (and ``supersedes``, ``target.section``), in characters."""
MAX_KEY_CHARS: Final = MAX_ID_CHARS * 2
"""Longest allowed ``idempotency_key`` and ``target_key``, in characters."""
FIRST_YEAR: Final = 1000
"""The earliest year a timestamp may have: stored text is fixed-width ISO 8601, whose
order is time order for the years 1000–9999."""
RECORD_ID_RULE: Final = f"ids are 1 to {MAX_ID_CHARS} ASCII letters, digits, '-' or '_'"
"""The id rule in words, for error messages."""

_RECORD_ID: Final = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_ID_CHARS}}}")


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def check_storable(value: str, what: str) -> str:
    """``value`` unchanged, or ValueError naming ``what`` when no backend could store it.

    Neither SQLite nor Postgres can store NUL or a lone surrogate (which ``json.loads``
    makes of ``"\\ud800"``), so the contract refuses them for every backend alike.
    """
    if "\x00" in value:
        raise ValueError(f"{what} must not contain NUL characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{what} must be valid Unicode (no lone surrogates)") from None
    return value


def is_storable(value: str) -> bool:
    """False for a string no backend can store (NUL, a lone surrogate): SQL backends
    cannot even bind one, so a look-up by such an id answers "absent" without asking."""
    try:
        check_storable(value, "the value")
    except ValueError:
        return False
    return True


def check_text(value: str, what: str, max_chars: int) -> str:
    """:func:`check_storable`, and at most ``max_chars`` characters; else ValueError."""
    check_storable(value, what)
    if len(value) > max_chars:
        raise ValueError(f"{what} is {len(value)} characters; the maximum is {max_chars}")
    return value


def is_valid_record_id(record_id: str) -> bool:
    """True for an id a store may be given on import: 1–128 ASCII letters, digits, ``-``, ``_``.

    Every id a store generates passes, and every passing id is one URL path segment as
    it is (no ``/``, ``%``, ``.`` or ``..``), so the dashboard can open it.
    """
    return _RECORD_ID.fullmatch(record_id) is not None


def canonical_scope(scope: Any) -> dict[str, str]:
    """``scope`` as every store keeps it: string keys and values, sorted by key.

    Raises :class:`MemoryValidationError` on ``scope`` for anything else (not a mapping,
    too many keys, a blank key, a value that is not a string, text too long or not
    storable). Every layer that takes a scope from outside calls this once, at its edge.
    """
    try:
        return _canonical(scope)
    except ValueError as exc:
        raise MemoryValidationError("scope", str(exc), scope) from None


def _canonical(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError("scope must be a mapping of string keys to string values")
    if len(value) > MAX_SCOPE_KEYS:
        raise ValueError(f"scope has {len(value)} keys; the maximum is {MAX_SCOPE_KEYS}")
    canonical: dict[str, str] = {}
    for key in sorted(value, key=lambda k: str(k)):
        part = value[key]
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"scope keys must be non-empty strings, got {key!r}")
        if not isinstance(part, str):
            raise ValueError(f"scope value for {key!r} must be a string, got {type(part).__name__}")
        check_text(key, "a scope key", MAX_SCOPE_PART_CHARS)
        check_text(part, f"scope value for {key!r}", MAX_SCOPE_PART_CHARS)
        canonical[key] = part
    return canonical


def normalise_tags(value: Any) -> tuple[str, ...]:
    """Tags as stores keep them: stripped, distinct, sorted; ValueError for bad ones."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise ValueError("tags must be a list of strings")
    tags: set[str] = set()
    for tag in value:
        if not isinstance(tag, str):
            raise ValueError(f"tags must be strings, got {type(tag).__name__}")
        stripped = check_text(tag.strip(), "a tag", MAX_TAG_CHARS)
        if not stripped:
            raise ValueError("tags must not be blank")
        tags.add(stripped)
    if len(tags) > MAX_TAGS:
        raise ValueError(f"{len(tags)} tags given; the maximum is {MAX_TAGS}")
    return tuple(sorted(tags))


def utc_moment(value: datetime | None) -> datetime | None:
    """A timezone-aware ``value`` in UTC (None stays None); ValueError for a naive one
    or one before :data:`FIRST_YEAR`."""
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamps must be timezone-aware (use UTC)")
    moment = value.astimezone(UTC)
    if moment.year < FIRST_YEAR:
        raise ValueError(f"timestamps before the year {FIRST_YEAR} are not supported: {value}")
    return moment


def format_timestamp(moment: datetime) -> str:
    """Render a UTC datetime as fixed-width ISO 8601 with microseconds and ``Z``.

    Fixed width makes the strings sort in time order, which the SQL backends rely on.
    """
    if moment.tzinfo is UTC and moment.year >= FIRST_YEAR:
        # What strftime gives below, for less (every write formats one): the text up to
        # the second is looked up, as a batch's stamps share one or two seconds.
        second = (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)
        head = _SECOND_TEXTS.get(second)
        if head is None:
            if len(_SECOND_TEXTS) >= _SECOND_TEXTS_KEPT:
                _SECOND_TEXTS.clear()
            head = _SECOND_TEXTS[second] = moment.isoformat(timespec="seconds")[:-6]
        return f"{head}.{moment.microsecond:06d}Z"
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_SECOND_TEXTS: Final[dict[tuple[int, ...], str]] = {}
"""``format_timestamp``'s text of recent seconds, by (year, month, day, hour, minute, second)."""
_SECOND_TEXTS_KEPT: Final = 1024


def model_date(moment: datetime) -> str:
    """The day of ``moment`` as the model reads it, in tool results and the recall
    block alike: ``YYYY-MM-DD``, in UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


def parse_scope_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """``["tenant=acme", "user=u1"]`` → the canonical scope ``{"tenant": "acme", "user": "u1"}``.

    Splits each pair at its first ``=``; keys and values are exact (nothing is stripped).
    A pair without ``=`` or with an empty key, a key given twice with different values,
    or a scope the contract refuses raises :class:`MemoryValidationError` on ``scope``.
    """
    scope: dict[str, str] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise MemoryValidationError("scope", f"expects key=value, got {pair!r}", pair)
        if scope.get(key, value) != value:
            raise MemoryValidationError(
                "scope", f"gives {key!r} twice with different values: {scope[key]!r}, {value!r}"
            )
        scope[key] = value
    return canonical_scope(scope)


def check_invalid_reason(reason: str | None) -> str | None:
    """Validate an ``invalidate`` reason (a string without NUL, at most MAX_REASON_CHARS).

    Raises :class:`MemoryValidationError` naming ``reason``; every backend calls it first.
    """
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise MemoryValidationError("reason", "must be a string or None", reason)
    try:
        return check_text(reason, "reason", MAX_REASON_CHARS)
    except ValueError as exc:
        raise MemoryValidationError("reason", str(exc), reason) from None
