"""The PostgreSQL rows of the ``"promote"`` extension: the ``memory_ledger`` table.

Migration 13 adds the table (:func:`migration`). The ledger is read and written in
the calling write's transaction, after the record it concerns was read ``FOR
UPDATE``, so two promotions of one record are serialised: the second sees the first.
Dead row versions of an erased row wait for VACUUM, as the records' do
(docs/postgres.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from recallstore.backends._promote_extension import PromotesRecords
from recallstore.records import Provenance
from recallstore.store.learning import LedgerEntry, ledger_entry_from_row, ledger_entry_row

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresLedger", "migration"]

_COLUMNS = "id, record_id, scope, at, body"


def migration(schema: str) -> list[str]:
    """Schema version 13 (issue 39): the evolution ledger, read oldest first and by record."""
    return [
        f"""CREATE TABLE {schema}.memory_ledger (
            seq bigserial PRIMARY KEY,
            id text NOT NULL UNIQUE,
            record_id text NOT NULL,
            scope text NOT NULL,
            at text NOT NULL,
            body text NOT NULL
        )""",
        f"CREATE INDEX memory_ledger_record ON {schema}.memory_ledger (record_id, seq)",
    ]


class PostgresLedger(PromotesRecords["AsyncConnection[Any]"]):
    """The ledger primitives of ``PostgresMemoryStore``."""

    _schema: str
    _table: str

    async def _set_supports(
        self,
        handle: AsyncConnection[Any],
        id: str,
        supports: tuple[Provenance, ...],
        at: datetime,
    ) -> None:
        from psycopg.types.json import Jsonb

        await handle.execute(
            f"UPDATE {self._table} SET supports = %s, updated_at = %s WHERE id = %s",
            (Jsonb([p.model_dump(mode="json") for p in supports]), at, id),
        )

    async def _append_ledger(self, handle: AsyncConnection[Any], entry: LedgerEntry) -> None:
        await handle.execute(
            f"INSERT INTO {self._schema}.memory_ledger ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s)",
            ledger_entry_row(entry),
        )

    async def _ledger_rows(
        self, handle: AsyncConnection[Any], record_id: str | None
    ) -> list[LedgerEntry]:
        sql = f"SELECT {_COLUMNS} FROM {self._schema}.memory_ledger"
        if record_id is None:
            cursor = await handle.execute(sql + " ORDER BY seq")
        else:
            cursor = await handle.execute(sql + " WHERE record_id = %s ORDER BY seq", (record_id,))
        return [ledger_entry_from_row(row) for row in await cursor.fetchall()]

    async def _delete_ledger_rows(self, handle: AsyncConnection[Any], ids: Sequence[str]) -> None:
        await handle.execute(
            f"DELETE FROM {self._schema}.memory_ledger WHERE id = ANY(%s)", (list(ids),)
        )
