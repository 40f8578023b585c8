"""The PostgreSQL rows of the ``"revise"`` extension: the ``memory_revisions`` table.

Migration 9 adds the table (``postgres.schema``). A revision is read ``FOR UPDATE`` in a
write transaction, so two reverts of one revision are serialised: the second sees it
reverted. A revert that makes a keyed record valid again can lose the race for its key
to a concurrent write (the unique index decides, ``postgres.keys``): it runs again, and
then refuses as the key is held.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from recallstore.backends._revise_extension import (
    RevisesRecords,
    revision_from_row,
    revision_row,
)
from recallstore.backends.postgres.connections import in_write
from recallstore.backends.postgres.keys import retrying
from recallstore.records import format_timestamp
from recallstore.store import StoredRevision

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresRevisions"]

_COLUMNS = "id, scope, created_at, body, undo, reverted_at"


class PostgresRevisions(RevisesRecords["AsyncConnection[Any]"]):
    """The revision-row primitives of ``PostgresMemoryStore``."""

    _schema: str
    _target: str

    async def revert_revision(self, revision_id: str) -> StoredRevision:
        """As ``RevisesRecords.revert_revision``; a lost race for a key runs it again."""
        attempt = super().revert_revision
        return await retrying(lambda: attempt(revision_id), self._target)

    async def _keep_revision(self, handle: AsyncConnection[Any], revision: StoredRevision) -> None:
        await handle.execute(
            f"INSERT INTO {self._schema}.memory_revisions ({_COLUMNS}) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            revision_row(revision),
        )

    async def _fetch_revision(
        self, handle: AsyncConnection[Any], revision_id: str
    ) -> StoredRevision | None:
        locking = in_write(handle)
        cursor = await handle.execute(
            f"SELECT {_COLUMNS} FROM {self._schema}.memory_revisions WHERE id = %s"
            + (" FOR UPDATE" if locking else ""),
            (revision_id,),
        )
        row = await cursor.fetchone()
        return None if row is None else revision_from_row(row)

    async def _all_revisions(self, handle: AsyncConnection[Any]) -> list[StoredRevision]:
        cursor = await handle.execute(f"SELECT {_COLUMNS} FROM {self._schema}.memory_revisions")
        return [revision_from_row(row) for row in await cursor.fetchall()]

    async def _mark_reverted(
        self, handle: AsyncConnection[Any], revision_id: str, at: datetime
    ) -> None:
        await handle.execute(
            f"UPDATE {self._schema}.memory_revisions SET reverted_at = %s WHERE id = %s",
            (format_timestamp(at), revision_id),
        )

    async def _replace_revision(
        self, handle: AsyncConnection[Any], revision: StoredRevision
    ) -> None:
        row = revision_row(revision)
        await handle.execute(
            f"UPDATE {self._schema}.memory_revisions SET scope = %s, created_at = %s, "
            "body = %s, undo = %s, reverted_at = %s WHERE id = %s",
            (*row[1:], row[0]),
        )
