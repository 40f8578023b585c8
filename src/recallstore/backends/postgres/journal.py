"""The Postgres backend's event journal: table access and ``LISTEN/NOTIFY``.

Rows live in ``<schema>.memory_journal``; ``seq`` is an identity column. Sequence
values are handed out when a row is inserted, not when its transaction commits, so
an append takes a transaction-level advisory lock first: appends commit one at a
time, in sequence order, and a tailer reading ``seq > last`` never skips a row that
commits later with a smaller id. Each append notifies ``<schema>_journal``; the
notification is delivered at commit, and wakes every listening tailer. Behind a
transaction pooler without a listen URL a tailer polls instead (:class:`JournalPoller`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from recallstore.backends.journal import JournalEntry
from recallstore.errors import StoreUnavailableError

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "PRUNE_BATCH",
    "JournalListener",
    "JournalPoller",
    "JournalTable",
    "PostgresJournalPrimitives",
    "trace_indexes",
]

PRUNE_BATCH: Final = 500
"""Rows one age-prune transaction deletes at most."""
# Rows carrying text (opt-in content); the same words as the partial index's WHERE.
_CARRIES_TEXT: Final = (
    "(envelope->'data'->>'contents') IS NOT NULL OR (envelope->'data'->>'reason') IS NOT NULL"
)


def trace_indexes(schema: str) -> list[str]:
    """Migration 12 (issue 36): what finds a deleted record's journal rows — of its
    conversations and runs, or carrying text — without a scan of the journal."""
    table = f"{schema}.memory_journal"
    return [
        f"CREATE INDEX IF NOT EXISTS memory_journal_conversation ON {table} "
        "((envelope->>'conversation_id')) WHERE envelope->>'conversation_id' IS NOT NULL",
        f"CREATE INDEX IF NOT EXISTS memory_journal_run ON {table} ((envelope->>'run_id')) "
        "WHERE envelope->>'run_id' IS NOT NULL",
        f"CREATE INDEX IF NOT EXISTS memory_journal_text ON {table} (seq) WHERE {_CARRIES_TEXT}",
    ]


class JournalTable:
    """The SQL of one schema's journal."""

    def __init__(self, schema: str) -> None:
        self.table = f"{schema}.memory_journal"
        self.channel = f"{schema}_journal"
        self._lock_key = f"{schema}.memory_journal"

    async def append(
        self, conn: AsyncConnection[Any], rows: Sequence[Mapping[str, Any]], max_events: int
    ) -> None:
        """Insert ``rows`` in the open transaction, in commit order; prune past ``max_events``."""
        if not rows:
            return
        # Two statements (four were). The lock first, on its own: the next statement's
        # snapshot then sees every append committed before ours, so its prune keeps
        # at most max_events rows (in one statement with the lock, its snapshot would
        # predate the lock's grant). Under the lock the newest rows are ours: the
        # prune and the notification take the newest id from the insert's RETURNING.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self._lock_key,))
        await conn.execute(
            f"WITH added AS (INSERT INTO {self.table} (at, type, envelope) "
            "SELECT * FROM unnest(%b::timestamptz[], %b::text[], %b::text[]::jsonb[]) "
            "RETURNING seq), "
            "newest AS (SELECT max(seq) AS seq FROM added), "
            f"pruned AS (DELETE FROM {self.table} WHERE seq <= (SELECT seq FROM newest) - %s) "
            "SELECT pg_notify(%s, (SELECT seq FROM newest)::text)",
            (
                [datetime.fromisoformat(str(row["timestamp"])) for row in rows],
                [row["type"] for row in rows],
                [json.dumps(row, separators=(",", ":")) for row in rows],
                max_events,
                self.channel,
            ),
        )
        if len(rows) > max_events:
            # The prune above cannot see the rows its own statement inserted.
            newest = f"(SELECT max(seq) FROM {self.table})"
            await conn.execute(
                f"DELETE FROM {self.table} WHERE seq <= {newest} - %s", (max_events,)
            )

    async def read(self, conn: AsyncConnection[Any], after: int, limit: int) -> list[JournalEntry]:
        """Entries with ids above ``after``, oldest first."""
        cursor = await conn.execute(
            f"SELECT seq, envelope FROM {self.table} WHERE seq > %s ORDER BY seq LIMIT %s",
            (after, limit),
        )
        return [JournalEntry(int(row[0]), row[1]) for row in await cursor.fetchall()]

    async def bounds(self, conn: AsyncConnection[Any]) -> tuple[int | None, int]:
        """The oldest retained id, and the newest id ever appended (the identity's last value)."""
        cursor = await conn.execute(
            f"SELECT (SELECT min(seq) FROM {self.table}), "
            f"(SELECT CASE WHEN is_called THEN last_value ELSE 0 END "
            f"FROM {self.table}_seq_seq)"
        )
        row = await cursor.fetchone()
        assert row is not None
        return (None if row[0] is None else int(row[0])), int(row[1] or 0)

    async def rows_holding(
        self, conn: AsyncConnection[Any], provenance: Sequence[str], scope_values: Sequence[str]
    ) -> list[tuple[int, dict[str, Any]]]:
        """``(seq, envelope)`` of the rows of one of the ``provenance`` conversations or
        runs, or carrying text (each by a partial index, :func:`trace_indexes`), or — a
        forget's ``scope_values``, a scan — whose scope holds one of them."""
        parts = [f"SELECT seq, envelope FROM {self.table} WHERE {_CARRIES_TEXT}"]
        if provenance:
            parts.append(
                f"SELECT seq, envelope FROM {self.table} "
                "WHERE envelope->>'conversation_id' = ANY(%(provenance)s)"
            )
            parts.append(
                f"SELECT seq, envelope FROM {self.table} "
                "WHERE envelope->>'run_id' = ANY(%(provenance)s)"
            )
        if scope_values:
            parts.append(
                f"SELECT seq, envelope FROM {self.table} WHERE EXISTS (SELECT 1 FROM "
                "jsonb_each_text(envelope->'scope') AS pair WHERE pair.value = ANY(%(values)s))"
            )
        cursor = await conn.execute(
            " UNION ".join(parts), {"provenance": list(provenance), "values": list(scope_values)}
        )
        return [(int(row[0]), row[1]) for row in await cursor.fetchall()]

    async def rewrite(
        self, conn: AsyncConnection[Any], rewrites: Sequence[tuple[int, Mapping[str, Any] | None]]
    ) -> None:
        """Delete each row whose new envelope is None, replace the others'."""
        gone = [seq for seq, envelope in rewrites if envelope is None]
        if gone:
            await conn.execute(f"DELETE FROM {self.table} WHERE seq = ANY(%s)", (gone,))
        for seq, envelope in rewrites:
            if envelope is not None:
                await conn.execute(
                    f"UPDATE {self.table} SET envelope = %s WHERE seq = %s",
                    (json.dumps(envelope, separators=(",", ":")), seq),
                )

    async def prune_before(self, conn: AsyncConnection[Any], cutoff: datetime) -> int:
        """Delete up to :data:`PRUNE_BATCH` rows stamped before ``cutoff``."""
        # Counted in the statement (RETURNING), the same in and out of a pipeline.
        cursor = await conn.execute(
            f"WITH gone AS (DELETE FROM {self.table} WHERE seq IN "
            f"(SELECT seq FROM {self.table} WHERE at < %s ORDER BY seq LIMIT %s) RETURNING 1) "
            "SELECT count(*) FROM gone",
            (cutoff, PRUNE_BATCH),
        )
        row = await cursor.fetchone()
        return 0 if row is None else int(row[0])


class JournalListener:
    """A connection of its own that ``LISTEN``s for a schema's journal appends."""

    def __init__(self, dsn: str, channel: str, target: str) -> None:
        self._dsn = dsn
        self._channel = channel
        self._target = target
        self._conn: AsyncConnection[Any] | None = None

    async def connect(self) -> AsyncConnection[Any]:
        """The listening connection, opened on first use."""
        import psycopg

        if self._conn is None:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self._dsn, autocommit=True, connect_timeout=10
                )
            except psycopg.Error as exc:
                raise StoreUnavailableError(self._target, f"cannot connect: {exc}") from None
            await conn.execute(f"LISTEN {self._channel}")
            self._conn = conn
        return self._conn

    async def wait(self) -> None:
        """Return on the next notification, or after a second without one.

        Notifications queue on the connection, so one sent between a reader's look at
        the table and this wait still wakes it.
        """
        import psycopg

        conn = await self.connect()
        try:
            async for _ in conn.notifies(timeout=1.0, stop_after=1):
                pass
        except psycopg.Error as exc:
            # A dropped connection: the next wait listens on a new one.
            await self.close()
            raise StoreUnavailableError(self._target, f"journal listener: {exc}") from exc

    async def close(self) -> None:
        """Close the connection (a later wait opens a new one)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


class JournalPoller:
    """What a tailer waits on when it cannot ``LISTEN`` (a transaction pooler and no
    listen URL): each wait lasts ``seconds``, then the tailer reads the table again."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds

    async def connect(self) -> None:
        """Nothing to open: polling holds no connection of its own."""

    async def wait(self) -> None:
        """Return after ``seconds``."""
        await asyncio.sleep(self._seconds)

    async def close(self) -> None:
        """Nothing to close."""


class PostgresJournalPrimitives:
    """The journal extension's primitives on Postgres, mixed into ``PostgresMemoryStore``."""

    if TYPE_CHECKING:
        _journal_table: JournalTable
        _listener: JournalListener | JournalPoller

        def _check_open(self) -> None: ...
        def _reading(self) -> AbstractAsyncContextManager[AsyncConnection[Any]]: ...
        def _writing(self) -> AbstractAsyncContextManager[AsyncConnection[Any]]: ...

    async def _append_journal(
        self, handle: AsyncConnection[Any], rows: Sequence[Mapping[str, Any]], max_events: int
    ) -> None:
        await self._journal_table.append(handle, rows, max_events)

    async def _read_journal(self, after: int, limit: int) -> list[JournalEntry]:
        async with self._reading() as conn:
            return await self._journal_table.read(conn, after, limit)

    async def _journal_bounds(self) -> tuple[int | None, int]:
        async with self._reading() as conn:
            return await self._journal_table.bounds(conn)

    async def _journal_candidates(
        self, handle: AsyncConnection[Any], provenance: Sequence[str], scope_values: Sequence[str]
    ) -> list[tuple[int, dict[str, Any]]]:
        return await self._journal_table.rows_holding(handle, provenance, scope_values)

    async def _journal_rewrite(
        self, handle: AsyncConnection[Any], rewrites: Sequence[tuple[int, dict[str, Any] | None]]
    ) -> None:
        await self._journal_table.rewrite(handle, rewrites)

    async def _prune_journal(self, older_than: datetime) -> None:
        while True:
            async with self._writing() as conn:
                pruned = await self._journal_table.prune_before(conn, older_than)
            if pruned < PRUNE_BATCH:
                return

    async def _journal_version(self) -> object:
        self._check_open()
        await self._listener.connect()
        return 0

    async def _wait_journal(self, version: object) -> None:
        self._check_open()
        await self._listener.wait()
