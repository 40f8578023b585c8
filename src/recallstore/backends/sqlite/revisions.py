"""The SQLite rows of the ``"revise"`` extension: the ``memory_revisions`` table.

Migration 9 adds the table (``sqlite.schema``); every statement runs through the
group commit (``self._commits``) so it lands in the calling write's transaction.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING, Any

import aiosqlite

from recallstore.backends._revise_extension import (
    RevisesRecords,
    RevisionRow,
    revision_from_row,
    revision_row,
)
from recallstore.records import format_timestamp
from recallstore.store import StoredRevision

if TYPE_CHECKING:
    from recallstore.backends.sqlite.commit import GroupCommit

__all__ = ["SqliteRevisions"]

_COLUMNS = "id, scope, created_at, body, undo, reverted_at"


def _insert(db: sqlite3.Connection, row: RevisionRow) -> None:
    db.execute(f"INSERT INTO memory_revisions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", row)


def _select(db: sqlite3.Connection, revision_id: str | None) -> list[tuple[Any, ...]]:
    if revision_id is None:
        return db.execute(f"SELECT {_COLUMNS} FROM memory_revisions").fetchall()
    sql = f"SELECT {_COLUMNS} FROM memory_revisions WHERE id = ?"
    return db.execute(sql, (revision_id,)).fetchall()


def _replace(db: sqlite3.Connection, row: RevisionRow) -> None:
    db.execute(
        "UPDATE memory_revisions SET scope = ?, created_at = ?, body = ?, undo = ?, "
        "reverted_at = ? WHERE id = ?",
        (*row[1:], row[0]),
    )


def _reverted(db: sqlite3.Connection, revision_id: str, at: str) -> None:
    db.execute("UPDATE memory_revisions SET reverted_at = ? WHERE id = ?", (at, revision_id))


class SqliteRevisions(RevisesRecords[aiosqlite.Connection]):
    """The revision-row primitives of ``SqliteMemoryStore``."""

    _commits: GroupCommit

    async def _keep_revision(self, handle: aiosqlite.Connection, revision: StoredRevision) -> None:
        self._commits.later(_insert, revision_row(revision))

    async def _fetch_revision(
        self, handle: aiosqlite.Connection, revision_id: str
    ) -> StoredRevision | None:
        rows = await self._commits.now(handle, _select, revision_id)
        return revision_from_row(rows[0]) if rows else None

    async def _all_revisions(self, handle: aiosqlite.Connection) -> list[StoredRevision]:
        rows = await self._commits.now(handle, _select, None)
        return [revision_from_row(row) for row in rows]

    async def _mark_reverted(
        self, handle: aiosqlite.Connection, revision_id: str, at: datetime
    ) -> None:
        self._commits.later(_reverted, revision_id, format_timestamp(at))

    async def _replace_revision(
        self, handle: aiosqlite.Connection, revision: StoredRevision
    ) -> None:
        self._commits.later(_replace, revision_row(revision))
