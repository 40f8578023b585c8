"""How the SQLite backend lays a record out in ``memory_records`` and its side tables."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, TypeVar

import aiosqlite
from pydantic import BaseModel

from recallstore.backends._keys import IdempotencyKey
from recallstore.records import MemoryRecord, format_timestamp

_T = TypeVar("_T")
_Statements = list[tuple[str, list[tuple[Any, ...]]]]
"""SQL statements for ``executemany``, each with its rows."""

__all__ = [
    "COLUMNS",
    "COLUMN_NAMES",
    "RECORD_COLUMNS",
    "execute_many",
    "execute_now",
    "fetchone",
    "fetchone_now",
    "insert_statements",
    "json_text",
    "on_thread",
    "record_from_row",
    "rows_by_id",
    "rows_by_key",
    "run",
]

COLUMNS: Final = (
    "id, kind, content, scope, tags, provenance, target, payload, supports, "
    "created_at, updated_at, invalid_at, invalid_reason, superseded_by, expires_at, "
    "idempotency_key"
)
"""The record's columns, in the order rows are read and written."""
COLUMN_NAMES: Final = tuple(name.strip() for name in COLUMNS.split(","))
RECORD_COLUMNS: Final = ", ".join(f"r.{name}" for name in COLUMN_NAMES)
"""The same columns of ``memory_records AS r``, for queries that join other tables."""
_JSON_COLUMNS: Final = frozenset({"scope", "tags", "provenance", "target", "payload", "supports"})


def execute_many(db: sqlite3.Connection, statements: _Statements) -> None:
    """Run statements with their rows (from :func:`insert_statements`) on the
    connection's thread."""
    for sql, rows in statements:
        db.executemany(sql, rows)


def insert_statements(records: Sequence[MemoryRecord]) -> _Statements:
    """The statements (for ``executemany``) that store ``records`` with their scope and
    tag index rows (the FTS row comes by trigger); the benchmark runs the same ones
    through plain sqlite3 as the floor."""
    statements: _Statements = [
        (_INSERT_RECORD, [_record_row(record) for record in records]),
        (
            _INSERT_SCOPE,
            [(key, value, record.id) for record in records for key, value in record.scope.items()],
        ),
    ]
    tag_rows = [(tag, record.id) for record in records for tag in record.tags]
    if tag_rows:
        statements.append((_INSERT_TAG, tag_rows))
    return statements


_INSERT_RECORD: Final = (
    f"INSERT INTO memory_records ({COLUMNS}) VALUES ({', '.join('?' * len(COLUMN_NAMES))})"
)
_INSERT_SCOPE: Final = (
    "INSERT INTO memory_scope (record_seq, key, value) "
    "SELECT seq, ?, ? FROM memory_records WHERE id = ?"
)
_INSERT_TAG: Final = (
    "INSERT INTO memory_tags (record_seq, tag) SELECT seq, ? FROM memory_records WHERE id = ?"
)
_to_json: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""Compact JSON text; one encoder for every row (``json.dumps`` with options builds a
new encoder per call)."""


def _json_or_none(model: BaseModel | None) -> str | None:
    return None if model is None else _to_json(model.model_dump(mode="json"))


def _record_row(record: MemoryRecord) -> tuple[Any, ...]:
    """The ``memory_records`` row of a record, in :data:`COLUMNS` order.

    Built field by field rather than through ``model_dump``: the record was validated
    at the edge, and dumping it whole cost as much as validating it.
    """
    expires_at, invalid_at = record.expires_at, record.invalid_at
    created_at = format_timestamp(record.created_at)
    # A new record's two stamps are one moment: format it once.
    updated_at = (
        created_at
        if record.updated_at is record.created_at
        else format_timestamp(record.updated_at)
    )
    return (
        record.id,
        record.kind,
        record.content,
        _to_json(record.scope),
        _to_json(record.tags),
        _json_or_none(record.provenance),
        _json_or_none(record.target),
        None if record.payload is None else _to_json(record.payload),
        _to_json([item.model_dump(mode="json") for item in record.supports]),
        created_at,
        updated_at,
        None if invalid_at is None else format_timestamp(invalid_at),
        record.invalid_reason,
        record.superseded_by,
        None if expires_at is None else format_timestamp(expires_at),
        record.idempotency_key,
    )


def json_text(value: Any) -> str:
    """A JSON column's text; a canonical scope gives one string per scope."""
    return _to_json(value)


def record_from_row(row: Iterable[Any]) -> MemoryRecord:
    """The record in a row that starts with :data:`COLUMNS` (extra columns are ignored)."""
    data: dict[str, Any] = {}
    for name, value in zip(COLUMN_NAMES, row, strict=False):
        data[name] = json.loads(value) if name in _JSON_COLUMNS and value is not None else value
    return MemoryRecord.model_validate(data)


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
    """``columns`` of the stored records among ``ids``, by id (one indexed look-up each);
    on the connection's thread."""
    found = {}
    for record_id in ids:
        row = fetchone_now(db, f"SELECT {columns} FROM memory_records WHERE id = ?", (record_id,))
        if row is not None:
            found[record_id] = row
    return found


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
