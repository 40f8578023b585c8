"""The SQLite rows of the ``"promote"`` extension: the ``memory_ledger`` table.

Migration 13 adds the table (:data:`MIGRATION`); every statement runs through the
group commit (``self._commits``) so it lands in the calling write's transaction, and
``PRAGMA secure_delete`` zeroes the space an erased row held.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import aiosqlite

from recallstore.backends._promote_extension import PromotesRecords
from recallstore.backends.sqlite.rows import json_text
from recallstore.records import Provenance, format_timestamp
from recallstore.store.learning import LedgerEntry, ledger_entry_from_row, ledger_entry_row

if TYPE_CHECKING:
    from recallstore.backends.sqlite.commit import GroupCommit

__all__ = ["MIGRATION", "SqliteLedger"]

MIGRATION: Final[tuple[str, ...]] = (
    """CREATE TABLE memory_ledger (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        record_id TEXT NOT NULL,
        scope TEXT NOT NULL,
        at TEXT NOT NULL,
        body TEXT NOT NULL
    )""",
    "CREATE INDEX memory_ledger_record ON memory_ledger (record_id, seq)",
)
"""Schema version 13 (issue 39): the evolution ledger, one row per corroborate,
promote and demote, read oldest first (``seq``) and by record."""

_COLUMNS = "id, record_id, scope, at, body"


def _insert(db: sqlite3.Connection, row: tuple[str, ...]) -> None:
    db.execute(f"INSERT INTO memory_ledger ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)", row).close()


def _select(db: sqlite3.Connection, record_id: str | None) -> list[tuple[Any, ...]]:
    if record_id is None:
        return db.execute(f"SELECT {_COLUMNS} FROM memory_ledger ORDER BY seq").fetchall()
    sql = f"SELECT {_COLUMNS} FROM memory_ledger WHERE record_id = ? ORDER BY seq"
    return db.execute(sql, (record_id,)).fetchall()


def _delete(db: sqlite3.Connection, ids: list[str]) -> None:
    db.executemany("DELETE FROM memory_ledger WHERE id = ?", [(i,) for i in ids]).close()


def _supports(db: sqlite3.Connection, id: str, supports: str, at: str) -> None:
    sql = "UPDATE memory_records SET supports = ?, updated_at = ? WHERE id = ?"
    db.execute(sql, (supports, at, id)).close()


class SqliteLedger(PromotesRecords[aiosqlite.Connection]):
    """The ledger primitives of ``SqliteMemoryStore``."""

    _commits: GroupCommit

    async def _set_supports(
        self,
        handle: aiosqlite.Connection,
        id: str,
        supports: tuple[Provenance, ...],
        at: datetime,
    ) -> None:
        text = json_text([p.model_dump(mode="json") for p in supports])
        self._commits.later(_supports, id, text, format_timestamp(at))

    async def _append_ledger(self, handle: aiosqlite.Connection, entry: LedgerEntry) -> None:
        self._commits.later(_insert, ledger_entry_row(entry))

    async def _ledger_rows(
        self, handle: aiosqlite.Connection, record_id: str | None
    ) -> list[LedgerEntry]:
        rows = await self._commits.now(handle, _select, record_id)
        return [ledger_entry_from_row(row) for row in rows]

    async def _delete_ledger_rows(self, handle: aiosqlite.Connection, ids: Sequence[str]) -> None:
        self._commits.later(_delete, list(ids))
