"""How the SQLite backend lays a record out in ``memory_records`` and its side tables."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final, TypeVar

import aiosqlite

from recallstore._payload import check_payload
from recallstore.backends._keys import IdempotencyKey
from recallstore.errors import MemoryValidationError
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemoryTarget,
    Provenance,
)

_T = TypeVar("_T")
Statements = list[tuple[str, list[tuple[Any, ...]]]]
"""SQL statements for ``executemany``, each with its rows."""

__all__ = [
    "COLUMNS",
    "COLUMN_NAMES",
    "RECORD_COLUMNS",
    "Statements",
    "execute_many",
    "execute_now",
    "fetchone",
    "fetchone_now",
    "json_text",
    "listing_hits",
    "on_thread",
    "record_from_row",
    "rows_by_id",
    "rows_by_key",
    "run",
]

COLUMNS: Final = (
    "id, kind, content, scope, tags, provenance, target, payload, supports, "
    "created_at, updated_at, invalid_at, invalid_reason, superseded_by, expires_at, "
    "idempotency_key, observed_at"
)
"""The record's columns, in the order rows are read and written."""
COLUMN_NAMES: Final = tuple(name.strip() for name in COLUMNS.split(","))
RECORD_COLUMNS: Final = ", ".join(f"r.{name}" for name in COLUMN_NAMES)
"""The same columns of ``memory_records AS r``, for queries that join other tables."""
_JSON_COLUMNS: Final = frozenset({"scope", "tags", "provenance", "target", "payload", "supports"})


def execute_many(db: sqlite3.Connection, statements: Statements) -> None:
    """Run statements with their rows on the connection's thread."""
    for sql, rows in statements:
        db.executemany(sql, rows)


json_text: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""A JSON column's text, compact; a canonical scope gives one string per scope. One
encoder for every row (``json.dumps`` with options builds a new encoder per call)."""


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    """The record in a row that starts with :data:`COLUMNS` (extra columns are ignored).

    The store wrote the row from a validated record, so the record is rebuilt without
    validating it again (a third of a listing's time went to that): the same values of
    the same types as validation gives, each JSON column parsed as validation would.
    A payload is parsed and held to the payload rules (``check_payload``, what the
    validator runs first). A row this fast path is not sure of (a payload those rules
    refuse, a timestamp not in the store's own format) goes through full validation.
    """
    payload = None if row[7] is None else _checked_payload(row[7])
    if row[7] is None or payload is not None:
        created, updated = _utc_or_none(row[9]), _utc_or_none(row[10])
        invalid_at = None if row[11] is None else _utc_or_none(row[11])
        expires_at = None if row[14] is None else _utc_or_none(row[14])
        # NULL when the record was observed when it was saved (schema version 8).
        observed_at = created if row[16] is None else _utc_or_none(row[16])
        if (
            created is not None
            and updated is not None
            and (invalid_at is not None or row[11] is None)
            and (expires_at is not None or row[14] is None)
            and observed_at is not None
        ):
            values = {
                "scope": dict(_scope(row[3])),
                "kind": row[1],
                "content": row[2],
                "tags": () if row[4] == "[]" else _tags(row[4]),
                "provenance": None if row[5] is None else _provenance(row[5]),
                "expires_at": expires_at,
                "target": None if row[6] is None else _target(row[6]),
                "payload": payload,
                "supports": () if row[8] == "[]" else _supports(row[8]),
                "idempotency_key": row[15],
                "id": row[0],
                "created_at": created,
                "updated_at": updated,
                "invalid_at": invalid_at,
                "invalid_reason": row[12],
                "superseded_by": row[13],
                "observed_at": observed_at,
            }
            return MemoryRecord.trusted(values)
    return _validated_record(row)


def listing_hits(rows: Iterable[Sequence[Any]]) -> list[MemoryHit]:
    """The hits of a listing (no score) of rows that start with :data:`COLUMNS`."""
    return [MemoryHit.trusted({"record": record_from_row(row), "score": None}) for row in rows]


def _checked_payload(text: str) -> Any:
    """A stored payload as validation makes it, or None when the rules refuse it (the
    caller then validates the row) or it is JSON null."""
    try:
        return check_payload(json.loads(text))
    except (ValueError, MemoryValidationError):
        return None


def _validated_record(row: Sequence[Any]) -> MemoryRecord:
    """The record in a row, validated as any input is."""
    data: dict[str, Any] = {}
    for name, value in zip(COLUMN_NAMES, row, strict=False):
        data[name] = json.loads(value) if name in _JSON_COLUMNS and value is not None else value
    return MemoryRecord.model_validate(data)


def _utc_or_none(text: str | None) -> datetime | None:
    """A stored timestamp (``format_timestamp``'s ``...Z``) as validation makes it, or
    None when absent or not in that form (the caller then validates the row)."""
    if text is None or not text.endswith("Z"):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is UTC else None


# What validation makes of a JSON column, cached by its text: a user's records share
# their scope and often their provenance. Scope dicts are mutable, so each record gets
# a copy; the rest are immutable and shared.
@lru_cache(maxsize=4096)
def _scope(text: str) -> dict[str, str]:
    scope: dict[str, str] = json.loads(text)
    # Canonical as validation makes it: keys sorted (the store writes them so).
    return scope if list(scope) == sorted(scope) else {key: scope[key] for key in sorted(scope)}


@lru_cache(maxsize=4096)
def _tags(text: str) -> tuple[str, ...]:
    tags: list[str] = json.loads(text)
    # Normalised as validation makes them: stripped, unique, sorted (stored so).
    return tuple(sorted({tag.strip() for tag in tags}))


@lru_cache(maxsize=4096)
def _provenance(text: str) -> Provenance:
    return Provenance.model_validate_json(text)


@lru_cache(maxsize=1024)
def _target(text: str) -> MemoryTarget:
    return MemoryTarget.model_validate_json(text)


@lru_cache(maxsize=1024)
def _supports(text: str) -> tuple[Provenance, ...]:
    return tuple(Provenance.model_validate(item) for item in json.loads(text))


async def on_thread(conn: aiosqlite.Connection, function: Callable[..., _T], *args: Any) -> _T:
    """``function(db, *args)`` on aiosqlite's thread, ``db`` being its sqlite3 connection.

    One hand-off to that thread for several statements: each public aiosqlite call is
    a hand-off of its own (tens of microseconds, several times that on a busy machine),
    and a statement with its cursor took three. aiosqlite has no public call for this;
    ``_execute`` is the queue its own methods use (unchanged since 0.17).
    """
    result: _T = await conn._execute(function, conn._conn, *args)  # type: ignore[no-untyped-call]
    return result


async def run(conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> None:
    """Execute one statement; its cursor is closed at once, so it holds no snapshot."""
    await on_thread(conn, execute_now, sql, params)


def execute_now(db: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> None:
    """:func:`run` for code already on the connection's thread."""
    db.execute(sql, params).close()


async def fetchone(
    conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()
) -> sqlite3.Row | tuple[Any, ...] | None:
    """The first row of ``sql``, or None (the cursor is closed at once)."""
    return await on_thread(conn, fetchone_now, sql, params)


def fetchone_now(
    db: sqlite3.Connection, sql: str, params: Sequence[Any] = ()
) -> sqlite3.Row | tuple[Any, ...] | None:
    """:func:`fetchone` for code already on the connection's thread."""
    cursor = db.execute(sql, params)
    try:
        row: sqlite3.Row | tuple[Any, ...] | None = cursor.fetchone()
        return row
    finally:
        cursor.close()


def rows_by_id(
    db: sqlite3.Connection, columns: str, ids: Sequence[str]
) -> dict[str, sqlite3.Row | tuple[Any, ...]]:
    """``columns`` of the stored records among ``ids``, by id in the order asked; on the
    connection's thread. One statement for up to :data:`_IDS_A_STATEMENT` ids (a
    statement per id cost twice as much for a search's 20 hits)."""
    if len(ids) == 1:  # get, delete, one supersede target: the plainest look-up
        row = fetchone_now(db, f"SELECT {columns} FROM memory_records WHERE id = ?", (ids[0],))
        return {} if row is None else {ids[0]: row}
    found: dict[str, tuple[Any, ...]] = {}
    distinct = list(dict.fromkeys(ids))
    for start in range(0, len(distinct), _IDS_A_STATEMENT):
        chunk = distinct[start : start + _IDS_A_STATEMENT]
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT id, {columns} FROM memory_records WHERE id IN ({marks})"
        for row in db.execute(sql, chunk).fetchall():
            found[str(row[0])] = tuple(row[1:])
    return {record_id: found[record_id] for record_id in distinct if record_id in found}


_IDS_A_STATEMENT: Final = 500
"""Ids bound in one statement by :func:`rows_by_id`, under SQLite's oldest limit on
bound parameters (999)."""


def rows_by_key(
    db: sqlite3.Connection, keys: Sequence[IdempotencyKey]
) -> dict[IdempotencyKey, sqlite3.Row | tuple[Any, ...]]:
    """The valid records holding ``keys`` (scope pairs, idempotency key), by key; on the
    connection's thread."""
    found = {}
    for pairs, name in keys:
        row = fetchone_now(
            db,
            f"SELECT {COLUMNS} FROM memory_records "
            "WHERE scope = ? AND idempotency_key = ? AND invalid_at IS NULL",
            (json_text(dict(pairs)), name),
        )
        if row is not None:
            found[(pairs, name)] = row
    return found
