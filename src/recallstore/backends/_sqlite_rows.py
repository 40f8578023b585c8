"""How the SQLite backend lays a record out in ``memory_records`` and its side tables."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Final

import aiosqlite

from recallstore.records import MemoryRecord

__all__ = [
    "COLUMNS",
    "COLUMN_NAMES",
    "RECORD_COLUMNS",
    "fetchone",
    "insert_records",
    "json_text",
    "record_from_row",
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


def _record_row(record: MemoryRecord) -> tuple[Any, ...]:
    data = record.model_dump(mode="json")
    row: list[Any] = []
    for name in COLUMN_NAMES:
        value = data[name]
        if name in _JSON_COLUMNS and value is not None:
            value = json_text(value)
        row.append(value)
    return tuple(row)


def json_text(value: Any) -> str:
    """A JSON column's text; a canonical scope gives one string per scope."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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
