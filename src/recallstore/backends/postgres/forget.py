"""The Postgres backend's ``forget(scope)`` (S17): a DELETE repeated until it finds nothing.

Under READ COMMITTED a DELETE that waits on a concurrent supersede's row lock deletes
the superseded row once that commits, but never sees the successor the supersede
inserted: the statement's snapshot predates it (23 of 30 raced rounds left one). The
next pass takes a new snapshot, which holds every successor of a row the last pass
waited for; a pass that deletes nothing waited for none. After :data:`FORGET_PASSES`
passes (writers that keep adding to the scope) the table is locked against writers for
one last pass, so the loop always ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from recallstore.backends._forget_traces import provenance_values

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["FORGET_PASSES", "forget_scope"]

FORGET_PASSES: Final = 16
"""Passes of a forget's DELETE before it locks out writers for the last one."""


async def forget_scope(
    conn: AsyncConnection[Any], table: str, scope: Mapping[str, str]
) -> list[tuple[str, str, frozenset[str]]]:
    """Delete every row of ``table`` whose scope contains ``scope``, in the caller's
    transaction; their ``(id, kind, provenance ids)``, oldest first."""
    from psycopg.types.json import Jsonb

    rows: list[Any] = []
    for attempt in range(FORGET_PASSES + 1):
        if attempt == FORGET_PASSES:
            await conn.execute(f"LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE")
        cursor = await conn.execute(
            f"DELETE FROM {table} WHERE scope @> %s "
            "RETURNING id, kind, created_at, provenance, supports",
            (Jsonb(dict(scope)),),
        )
        deleted = await cursor.fetchall()
        if not deleted:
            break
        rows.extend(deleted)
    rows.sort(key=lambda row: (row[2], row[0]))
    return [(row[0], row[1], provenance_values(row[3], row[4] or ())) for row in rows]
