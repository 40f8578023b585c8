"""The time filters of a search, once for every backend: the observed window (S19) and
``as_of`` (S20), with S9's validity and expiry judged at the moment they ask about.

``as_of=T`` shows the store as it stood at ``T``: a record counts when it was created
by ``T``; "invalidated" means invalidated (or superseded) at or before ``T``, and
"expired" means ``expires_at <= T``, so ``include_invalidated`` / ``include_expired``
keep their meaning, read at ``T`` instead of now. The observed window is half-open,
``observed_after <= observed_at < observed_before``, so consecutive windows (days,
weeks) never share a record.

Both SQL backends store ``observed_at`` NULL when it equals ``created_at`` (SQLite
schema version 8, Postgres 7: every older record, and most new ones), hence the
``coalesce``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from recallstore.records import (
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    format_timestamp,
)
from recallstore.store import check_observed_at

__all__ = [
    "check_observed_inputs",
    "postgres_time_clauses",
    "sqlite_time_conditions",
    "stands_then",
]


def check_observed_inputs(inputs: Sequence[MemoryWriteInput], now: datetime) -> None:
    """Refuse, before anything is written, an input observed more than
    ``MAX_OBSERVED_SKEW`` after ``now`` (the store's clock): a memory of the future."""
    for index, inp in enumerate(inputs):
        check_observed_at(inp.observed_at, now, f"inputs[{index}].observed_at")


def stands_then(query: MemorySearchQuery, record: MemoryRecord, now: datetime) -> bool:
    """The reference rule: ``record`` passes the query's validity, expiry, ``as_of`` and
    observed-window filters (S9, S19, S20)."""
    moment = now if query.as_of is None else query.as_of
    if query.as_of is not None and record.created_at > moment:
        return False
    invalid_then = record.invalid_at is not None and record.invalid_at <= moment
    if not query.include_invalidated and (
        invalid_then or (query.as_of is None and record.invalid_at is not None)
    ):
        return False
    if not query.include_expired and record.is_expired(moment):
        return False
    if query.observed_after is not None and record.observed_at < query.observed_after:
        return False
    return query.observed_before is None or record.observed_at < query.observed_before


_SQLITE_OBSERVED = "coalesce(r.observed_at, r.created_at)"


def sqlite_time_conditions(query: MemorySearchQuery, now: datetime) -> tuple[list[str], list[Any]]:
    """:func:`stands_then` as SQLite conditions on ``memory_records AS r`` (timestamps
    are fixed-width text, whose order is time order)."""
    where: list[str] = []
    params: list[Any] = []
    as_of = None if query.as_of is None else format_timestamp(query.as_of)
    if as_of is not None:
        where.append("r.created_at <= ?")
        params.append(as_of)
    if not query.include_invalidated:
        if as_of is None:
            where.append("r.invalid_at IS NULL")
        else:
            where.append("(r.invalid_at IS NULL OR r.invalid_at > ?)")
            params.append(as_of)
    if not query.include_expired:
        where.append("(r.expires_at IS NULL OR r.expires_at > ?)")
        params.append(as_of or format_timestamp(now))
    if query.observed_after is not None:
        # SQLite stores an observed time only when it is before the save, so nothing
        # saved before the window is in it: the bound on created_at lets a listing's
        # walk of the recency index stop at the window's start.
        after = format_timestamp(query.observed_after)
        where.append(f"r.created_at >= ? AND {_SQLITE_OBSERVED} >= ?")
        params.extend((after, after))
    if query.observed_before is not None:
        where.append(f"{_SQLITE_OBSERVED} < ?")
        params.append(format_timestamp(query.observed_before))
    return where, params


def postgres_time_clauses(query: MemorySearchQuery, now: datetime) -> tuple[list[str], list[Any]]:
    """:func:`stands_then` as Postgres clauses (``timestamptz`` columns)."""
    where: list[str] = []
    params: list[Any] = []
    if query.as_of is not None:
        where.append("created_at <= %s")
        params.append(query.as_of)
    if not query.include_invalidated:
        if query.as_of is None:
            where.append("invalid_at IS NULL")
        else:
            where.append("(invalid_at IS NULL OR invalid_at > %s)")
            params.append(query.as_of)
    if not query.include_expired:
        where.append("(expires_at IS NULL OR expires_at > %s)")
        params.append(now if query.as_of is None else query.as_of)
    if query.observed_after is not None:
        where.append("coalesce(observed_at, created_at) >= %s")
        params.append(query.observed_after)
    if query.observed_before is not None:
        where.append("coalesce(observed_at, created_at) < %s")
        params.append(query.observed_before)
    return where, params
