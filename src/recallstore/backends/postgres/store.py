"""``PostgresMemoryStore``: the production tier, for deployments that outgrow one machine.

Same protocol and conformance kit as the SQLite backend. Text search: a stored
``tsvector`` of the Porter stems every backend indexes, under a GIN index, finds the
candidates, and the ranking every keyword backend shares (``recallstore._search.query``)
orders them; a scope's pairs are lexemes of the same ``tsvector`` (``postgres.scope_terms``).
Searches and listings are ``postgres.reads``; writes and the rest are here.

Needs the ``postgres`` extra: ``pip install 'recallstore[postgres]'``.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Self

from recallstore.backends._forget_extension import ForgetsScopes, Forgotten
from recallstore.backends._forget_traces import provenance_of
from recallstore.backends._fork import forked_refusal
from recallstore.backends._journal_extension import JournalsRecalls
from recallstore.backends._vectors import Matrix
from recallstore.backends.base import (
    IdempotencyKey,
    RecordChanges,
    StoreDescription,
)
from recallstore.backends.journal import DEFAULT_JOURNAL, JournalSettings
from recallstore.backends.postgres import stored, vectors
from recallstore.backends.postgres.connections import (
    POLL_SECONDS,
    PoolMode,
    check_pool_mode,
    dropped_if_read_only,
    explain,
    in_write,
    meanwhile,
    open_pool,
    redact,
    split_url,
    writing_on,
)
from recallstore.backends.postgres.forget import forget_scope
from recallstore.backends.postgres.journal import (
    JournalListener,
    JournalPoller,
    JournalTable,
    PostgresJournalPrimitives,
)
from recallstore.backends.postgres.keys import RetriesKeyRaces, fetch_keyed, in_key_order
from recallstore.backends.postgres.ledger import PostgresLedger
from recallstore.backends.postgres.pgvector import STORAGE_LABELS, VectorStorage
from recallstore.backends.postgres.reads import PostgresReads
from recallstore.backends.postgres.revisions import PostgresRevisions
from recallstore.backends.postgres.routing import WAL_POSITION, StandbyReads
from recallstore.backends.postgres.rows import (
    COLUMNS,
    insert_arrays,
    insert_statement,
    new_insert_arrays,
    record_from,
)
from recallstore.backends.postgres.schema import SCHEMA_VERSION, migrate, read_store_id
from recallstore.backends.postgres.scope_terms import CommonPairs
from recallstore.backends.postgres.search import PostgresStatistics
from recallstore.embedding import Embedder
from recallstore.errors import ConfigurationError, MissingDependencyError, StoreUnavailableError
from recallstore.records import MemoryRecord
from recallstore.store import (
    EXPORT_EXTENSION,
    FORGET_EXTENSION,
    IDEMPOTENCY_EXTENSION,
    IMPORT_EXTENSION,
    PROMOTE_EXTENSION,
    REVISE_EXTENSION,
    Clock,
    NewRecords,
    new_record_id,
    utc_now,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["SCHEMA_VERSION", "PostgresMemoryStore"]

_EXPORT_PAGE = 500
_INSERT_PAGE = 1_000
# A write's rows go in pages, each made while the server inserts the one before. The
# first is small: the server waits for it, and inserts a row in about four times what
# the client takes to make one (so while it inserts 250, the client makes 750 more).
_FIRST_PAGE = 250
_OVERLAP_PAGE = 750
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PostgresMemoryStore(
    PostgresLedger,
    PostgresRevisions,
    PostgresJournalPrimitives,
    JournalsRecalls,
    ForgetsScopes["AsyncConnection[Any]"],
    PostgresReads,
    RetriesKeyRaces,
):
    """A ``MemoryStore`` on PostgreSQL (13+), in its own schema of one database.

    Keyword search (Porter stems, weighted BM25), durable, import, export, forget,
    revise and promote.
    """

    durable = True
    extensions = frozenset(
        {
            IMPORT_EXTENSION,
            EXPORT_EXTENSION,
            IDEMPOTENCY_EXTENSION,
            FORGET_EXTENSION,
            REVISE_EXTENSION,
            PROMOTE_EXTENSION,
        }
    )

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "recallstore",
        clock: Clock = utc_now,
        ids: Callable[[], str] = new_record_id,
        min_connections: int = 1,
        max_connections: int = 8,
        journal: JournalSettings | None = DEFAULT_JOURNAL,
        embedder: Embedder | str | None = None,
        pool_mode: PoolMode = "session",
        listen_url: str | None = None,
        standby_url: str | None = None,
        standby_wait: float = 0.1,
    ) -> None:
        """``pool_mode="transaction"`` behind a transaction pooler (PgBouncer): no
        server-side prepared statements; the journal's live feed ``LISTEN``s on
        ``listen_url`` (direct or session mode) when given, else polls the table.
        ``standby_url``: searches and listings go to that hot standby once it replayed
        this store's writes (waiting ``standby_wait`` seconds at most, else to the
        primary). See docs/postgres.md#behind-pgbouncer and #read-routing."""
        if not _IDENTIFIER.match(schema):
            raise ConfigurationError(
                f"schema must be a lower-case SQL identifier (letters, digits, _), got {schema!r}"
            )
        super().__init__(clock=clock, ids=ids, journal=journal)
        self._init_hybrid(embedder)
        self._dsn = dsn
        self._pool_mode = check_pool_mode(pool_mode)
        self._journal_table = JournalTable(schema)
        self._target = redact(dsn)
        # A connection of its own that LISTENs for journal appends (tailers only); a
        # transaction pooler cannot carry LISTEN, so without a listen URL tailers poll.
        self._listener: JournalListener | JournalPoller
        if pool_mode == "transaction" and listen_url is None:
            self._listener = JournalPoller(POLL_SECONDS)
        else:
            listen = listen_url or dsn
            channel = self._journal_table.channel
            self._listener = JournalListener(listen, channel, redact(listen))
        self._schema = schema
        self._table = f"{schema}.memory_records"
        self._statistics = PostgresStatistics(schema)
        self._common = CommonPairs(schema)
        self._stored: dict[str, str] = {}  # postgres.stored's calls by name, read at open
        self._pool_size = (min_connections, max_connections)
        routed = standby_url and StandbyReads(standby_url, pool_mode, self._pool_size, standby_wait)
        self._standby = routed or None
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opened_in = os.getpid()  # the process that opened the pool (a fork refuses)
        self._vector_storage: VectorStorage | None = None
        self._insert_sql = insert_statement(self._table)

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The store for a ``postgresql://`` (or ``postgres://``) URL, schema ``recallstore``;
        ``?recallstore_pool_mode=transaction``, ``&recallstore_listen_url=…`` and
        ``&recallstore_standby_url=…`` (percent-encoded) set ``pool_mode``,
        ``listen_url`` and ``standby_url`` (postgres.connections)."""
        dsn, mode, listen, standby = split_url(url)
        return cls(dsn, pool_mode=mode, listen_url=listen, standby_url=standby)

    def describe(self) -> StoreDescription:
        """At its URL, password redacted; open with an embedder, where its vectors live."""
        label = type(self).__name__
        if self._embedder is not None and self._vector_storage is not None:
            label += f" · vectors in {STORAGE_LABELS[self._vector_storage]}"
        return StoreDescription(label=label, target=self._target)

    @property
    def vector_storage(self) -> VectorStorage | None:
        """``"pgvector"`` or ``"array"`` (``real[]``); None until open with an embedder."""
        return self._vector_storage

    async def move_vectors(self, to: VectorStorage) -> int:
        """Move every vector to ``to`` (``"pgvector"`` or ``"array"``) in one transaction;
        how many moved. Opening a store never moves them (docs/postgres.md)."""
        async with self._writing() as conn:
            moved = await vectors.move_vectors(conn, self._schema, self._target, to)
        if self._embedder is not None:
            self._vector_storage = to
        return moved

    async def open(self) -> None:
        """Connect, refuse a newer schema, and apply pending migrations."""
        if self._pool is not None:
            self._check_open()  # refuses a pool opened before this process forked
            return
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise MissingDependencyError("the Postgres backend", "postgres") from exc
        pool = await open_pool(self._dsn, self._pool_size, self._pool_mode, self._target)
        # Any failure up to here (a lock timeout on the first read too) closes the pool.
        try:
            async with pool.connection() as conn:
                await migrate(conn, self._schema, self._target)
                if self._embedder is not None:
                    self._vector_storage = await vectors.record_embedder(
                        conn, self._schema, self._target, self._embedder
                    )
                cursor = await conn.execute(
                    f"SELECT max(created_at), {WAL_POSITION} FROM {self._table}"
                )
                newest = await cursor.fetchone()
                self._stored = await stored.installed(conn, self._schema)
                await self._common.read(conn)
                self._store_id = await read_store_id(conn, self._schema)
        except psycopg.Error as exc:
            await pool.close()
            raise StoreUnavailableError(self._target, f"cannot open: {explain(exc)}") from None
        except BaseException:
            await pool.close()
            raise
        if self._standby is not None:
            try:
                await self._standby.open()
            except BaseException:
                await pool.close()
                raise
        self._pool, self._opened_in = pool, os.getpid()
        if newest is not None:
            if self._standby is not None:  # read there once it has the schema migrated
                self._standby.wrote(newest[1])
            if newest[0] is not None:
                self._clock.observe(newest[0])
        await self._start_journal()

    async def aclose(self) -> None:
        """Close every pooled connection; later calls raise StoreUnavailableError. In a
        process forked while the store was open, nothing is done: closing the pool there
        would end the parent's sessions."""
        if self._pool is not None and self._opened_in != os.getpid():
            return
        await self._stop_journal()
        await self._listener.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
        if self._standby is not None:
            await self._standby.close()

    @property
    def read_routing(self) -> dict[str, int]:
        """With a ``standby_url``: searches and listings the standby served
        (``"standby"``) and those sent to the primary instead (``"primary"``)."""
        return {} if self._standby is None else dict(self._standby.counts)

    @property
    def _is_open(self) -> bool:
        return self._pool is not None

    def _check_open(self) -> None:
        """Also :class:`ConfigurationError` in a process forked while the store was open."""
        super()._check_open()
        if self._opened_in != os.getpid():
            connections = "its pool, whose sessions the parent goes on using"
            refusal = forked_refusal(self._opened_in, connections)
            raise ConfigurationError(f"memory store {self._target!r}: {refusal}")

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection for one call; a database failure is StoreUnavailableError."""
        import psycopg
        from psycopg.errors import (
            DuplicatePreparedStatement,
            InvalidSqlStatementName,
            ReadOnlySqlTransaction,
        )
        from psycopg_pool import PoolTimeout

        self._check_open()
        assert self._pool is not None  # what _check_open just checked
        try:
            async with self._pool.connection() as conn, dropped_if_read_only(conn):
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as exc:
            raise StoreUnavailableError(self._target, str(exc).strip()) from exc
        except (InvalidSqlStatementName, DuplicatePreparedStatement, ReadOnlySqlTransaction) as exc:
            # psycopg's prepared statements, lost or doubled by a transaction pooler; a
            # write on a node that takes none (connections.is_read_only).
            raise StoreUnavailableError(self._target, explain(exc)) from exc

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[AsyncConnection[Any]]:
        # One transaction, not pipelined: a pipeline that fails mid-write (a unique
        # key's race, the embedder check) left psycopg's prepared statements and the
        # write's outcome out of step with the server (seen in CI).
        async with self._reading() as conn:
            try:
                async with conn.transaction():
                    writing_on(conn, True)
                    yield conn
            finally:
                writing_on(conn, False)
            standby = self._standby
            if standby is not None:
                # Where the standby must have replayed to for this store's reads.
                cursor = await conn.execute("SELECT pg_current_wal_insert_lsn()::text")
                if row := await cursor.fetchone():
                    standby.wrote(row[0])

    async def _fetch_records(
        self, handle: AsyncConnection[Any], ids: Sequence[str]
    ) -> dict[str, MemoryRecord]:
        # Inside a write transaction (an import), lock what we read until it commits.
        locking = in_write(handle)
        cursor = await handle.execute(
            f"SELECT {COLUMNS} FROM {self._table} WHERE id = ANY(%s)"
            + (" ORDER BY id FOR UPDATE" if locking else ""),
            (list(ids),),
        )
        return {row[0]: record_from(row) for row in await cursor.fetchall()}

    async def _fetch_invalid(
        self, handle: AsyncConnection[Any], ids: Sequence[str]
    ) -> dict[str, bool]:
        # Row locks serialise concurrent supersedes of one record: the loser sees it
        # invalidated once the winner commits.
        cursor = await handle.execute(
            f"SELECT id, invalid_at FROM {self._table} WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
            (list(ids),),
        )
        return {row[0]: row[1] is not None for row in await cursor.fetchall()}

    async def _fetch_keyed(
        self, handle: AsyncConnection[Any], keys: Sequence[IdempotencyKey]
    ) -> dict[IdempotencyKey, MemoryRecord]:
        # No lock per key: the unique index decides a race (postgres.keys).
        return await fetch_keyed(handle, self._table, keys)

    async def _insert_new(self, handle: AsyncConnection[Any], batch: NewRecords) -> None:
        if (
            batch.built
            or self.embedder is not None  # vectors are stored from records
            or any(inp.idempotency_key for inp in batch.inputs)  # in_key_order, in _insert
        ):
            await super()._insert_new(handle, batch)
            return
        # Rows from the inputs, page by page: each page's made while the server inserts
        # the page before, and the records while it inserts the last.
        count = len(batch.inputs)
        if not count:  # every input's key held the same record already
            return
        starts = [0, *range(_FIRST_PAGE, count, _OVERLAP_PAGE)]
        pages = [slice(start, end) for start, end in zip(starts, [*starts[1:], count], strict=True)]
        rows = new_insert_arrays(batch, pages[0])
        for page in pages[1:]:
            inserting = handle.execute(self._insert_sql, rows)
            rows = await meanwhile(inserting, partial(new_insert_arrays, batch, page))
        await meanwhile(handle.execute(self._insert_sql, rows), batch.records)

    async def _insert(self, handle: AsyncConnection[Any], records: Sequence[MemoryRecord]) -> None:
        records = in_key_order(records)  # two batches sharing keys wait in one direction
        made = self._vectors_of(records)
        storage: VectorStorage | None = None
        if made is not None:
            target, given = self._vector_check
            storage = await vectors.check_embedder(handle, self._schema, target, given, lock=True)
            if storage == "pgvector":  # before the rows: see pgvector.insert
                await vectors.insert_vectors(handle, self._schema, records, made, storage)
        # One statement per page of rows, so the statement-level triggers that keep the
        # search statistics run once per page rather than once per record.
        for start in range(0, len(records), _INSERT_PAGE):
            page = records[start : start + _INSERT_PAGE]
            await handle.execute(self._insert_sql, insert_arrays(page))
        if made is not None and storage == "array":
            await vectors.insert_vectors(handle, self._schema, records, made, storage)

    async def _update(self, handle: AsyncConnection[Any], id: str, changes: RecordChanges) -> None:
        names = sorted(changes)  # field names from the base class, never user text
        assignments = ", ".join(f"{name} = %s" for name in names)
        await handle.execute(
            f"UPDATE {self._table} SET {assignments} WHERE id = %s",
            [*(changes[name] for name in names), id],
        )

    async def _delete(self, id: str) -> None:
        """Postgres keeps dead row versions until VACUUM; see docs/postgres.md."""
        await self._flush_before_erasing()
        async with self._writing() as conn:
            before = (await self._fetch_records(conn, [id])).get(id)
            await conn.execute(f"DELETE FROM {self._table} WHERE id = %s", (id,))
            if before is not None:
                await self._erase_traces(conn, [id], provenance_of(before))
            await self._journal_delete(conn, id, before)

    async def _forget(
        self, handle: AsyncConnection[Any], scope: Mapping[str, str]
    ) -> list[Forgotten]:
        """Every pass of ``scope @>`` (the GIN index) it takes (``postgres.forget``);
        dead rows wait for VACUUM."""
        return await forget_scope(handle, self._table, scope)

    async def _export(self, scope: Mapping[str, str]) -> AsyncIterator[MemoryRecord]:
        """Oldest first, from one snapshot (a REPEATABLE READ transaction)."""
        from psycopg.types.json import Jsonb

        async with self._reading() as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            after: tuple[Any, str] | None = None
            while True:
                keyset = "" if after is None else "AND (created_at, id) > (%s, %s)"
                cursor = await conn.execute(
                    f"SELECT {COLUMNS} FROM {self._table} WHERE scope @> %s {keyset} "
                    "ORDER BY created_at, id LIMIT %s",
                    [Jsonb(dict(scope)), *(after or ()), _EXPORT_PAGE],
                )
                rows = await cursor.fetchall()
                for row in rows:
                    yield record_from(row)
                if len(rows) < _EXPORT_PAGE:
                    return
                after = (rows[-1][6], rows[-1][0])

    async def _replace_vectors(
        self, handle: AsyncConnection[Any], embedder: Embedder, made: dict[str, Matrix]
    ) -> None:
        await vectors.replace_vectors(handle, self._schema, embedder, made)

    async def _lock_embedder(self, handle: AsyncConnection[Any]) -> None:
        await vectors.lock_embedder(handle, self._schema)
