"""How the SQLite backend lays a record out in ``memory_records`` and its side tables."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Final

import aiosqlite
from pydantic import BaseModel

from recallstore.records import MemoryRecord, format_timestamp

__all__ = [
    "COLUMNS",
    "COLUMN_NAMES",
    "RECORD_COLUMNS",
    "fetchone",
    "insert_records",
    "record_from_row",
    "run",
]

COLUMNS: Final = (
    "id, kind, content, scope, tags, provenance, target, payload, supports, "
    "created_at, updated_at, invalid_at, invalid_reason, superseded_by, expires_at"
)
"""The record's columns, in the order rows are read and written."""
COLUMN_NAMES: Final = tuple(name.strip() for name in COLUMNS.split(","))
RECORD_COLUMNS: Final = ", ".join(f"r.{name}" for name in COLUMN_NAMES)
"""The same columns of ``memory_records AS r``, for queries that join other tables."""
_JSON_COLUMNS: Final = frozenset({"scope", "tags", "provenance", "target", "payload", "supports"})


async def insert_records(conn: aiosqlite.Connection, records: Sequence[MemoryRecord]) -> None:
    """Insert records with their scope and tag index rows (the FTS row comes by trigger)."""
    await conn.executemany(
        f"INSERT INTO memory_records ({COLUMNS}) VALUES ({', '.join('?' * len(COLUMN_NAMES))})",
        [_record_row(record) for record in records],
    )
    await conn.executemany(
        "INSERT INTO memory_scope (record_seq, key, value) "
        "SELECT seq, ?, ? FROM memory_records WHERE id = ?",
        [(key, value, record.id) for record in records for key, value in record.scope.items()],
    )
    tag_rows = [(tag, record.id) for record in records for tag in record.tags]
    if tag_rows:
        await conn.executemany(
            "INSERT INTO memory_tags (record_seq, tag) "
            "SELECT seq, ? FROM memory_records WHERE id = ?",
            tag_rows,
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
    )


def record_from_row(row: Iterable[Any]) -> MemoryRecord:
    """The record in a row that starts with :data:`COLUMNS` (extra columns are ignored)."""
    data: dict[str, Any] = {}
    for name, value in zip(COLUMN_NAMES, row, strict=False):
        data[name] = json.loads(value) if name in _JSON_COLUMNS and value is not None else value
    return MemoryRecord.model_validate(data)


async def run(conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> None:
    """Execute one statement; closing the cursor at once ends it, so it holds no snapshot."""
    async with conn.execute(sql, params):
        pass


async def fetchone(
    conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()
) -> sqlite3.Row | tuple[Any, ...] | None:
    """The first row of ``sql``, or None."""
    async with conn.execute(sql, params) as cursor:
        row: sqlite3.Row | tuple[Any, ...] | None = await cursor.fetchone()
        return row
