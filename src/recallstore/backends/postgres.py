"""``PostgresMemoryStore``: the production tier, for deployments that outgrow one machine.

Same protocol and conformance kit as the SQLite backend. Text search uses a stored
``tsvector`` with a GIN index over the same tokens the other backends index (English
stemming, no stop words); subset scope filters use ``jsonb @>`` on a GIN index.
Postgres' own ``ts_rank`` has no notion of term rarity, so relevance here is BM25-like:
each matched term's ``ts_rank`` weighted by its inverse document frequency.

Needs the ``postgres`` extra: ``pip install 'recallstore[postgres]'``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self

from recallstore._text import tokenize
from recallstore.backends._journal_extension import JournalsRecalls
from recallstore.backends._postgres_journal import PRUNE_BATCH, JournalListener, JournalTable
from recallstore.backends._postgres_schema import SCHEMA_VERSION, migrate
from recallstore.backends._ranking import lucene_idf
from recallstore.backends.base import BaseMemoryStore, RecordChanges, StoreDescription
from recallstore.backends.journal import DEFAULT_JOURNAL, JournalEntry, JournalSettings
from recallstore.errors import ConfigurationError, MissingDependencyError, StoreUnavailableError
from recallstore.records import MemoryHit, MemoryRecord, MemorySearchQuery
from recallstore.store import EXPORT_EXTENSION, IMPORT_EXTENSION, Clock, new_record_id, utc_now

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["SCHEMA_VERSION", "PostgresMemoryStore"]

_EXPORT_PAGE = 500
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_PASSWORD_IN_URL = re.compile(r"(://[^:/@]+):[^@]*@")
# password=... in a key/value conninfo string or a URL's query string.
_PASSWORD_PARAMETER = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)

_COLUMNS = (
    "id, scope, kind, content, tags, provenance, created_at, updated_at, invalid_at, "
    "invalid_reason, superseded_by, expires_at, target, payload, supports"
)


def _redact(dsn: str) -> str:
    return _PASSWORD_PARAMETER.sub(r"\1***", _PASSWORD_IN_URL.sub(r"\1:***@", dsn))


def _index_text(content: str) -> str:
    # Index our own tokens so every backend agrees on what a word is.
    return " ".join(tokenize(content))


def _tsquery_operand(term: str) -> str:
    # Terms are runs of letters and digits only (see _text), so quoting cannot be escaped.
    return f"'{term}'"


class PostgresMemoryStore(JournalsRecalls, BaseMemoryStore["AsyncConnection[Any]"]):
    """A ``MemoryStore`` on PostgreSQL (13+), in its own schema of one database.

    Keyword search (stemmed, rarity-weighted), durable, import and export.
    """

    durable = True
    extensions = frozenset({IMPORT_EXTENSION, EXPORT_EXTENSION})

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
    ) -> None:
        if not _IDENTIFIER.match(schema):
            raise ConfigurationError(
                f"schema must be a lower-case SQL identifier (letters, digits, _), got {schema!r}"
            )
        super().__init__(clock=clock, ids=ids, journal=journal)
        self._dsn = dsn
        self._journal_table = JournalTable(schema)
        # A connection of its own that LISTENs for journal appends (tailers only).
        self._target = _redact(dsn)
        self._listener = JournalListener(dsn, self._journal_table.channel, self._target)
        self._schema = schema
        self._table = f"{schema}.memory_records"
        self._config = f"'{schema}.memory_text'::regconfig"
        self._pool_size = (min_connections, max_connections)
        self._pool: AsyncConnectionPool[Any] | None = None
        self._insert_sql = (
            f"INSERT INTO {self._table} ({_COLUMNS}, search_text) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            f"to_tsvector({self._config}, %s))"
        )

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The store for a ``postgresql://`` (or ``postgres://``) URL, schema ``recallstore``."""
        return cls(url)

    def describe(self) -> StoreDescription:
        """``PostgresMemoryStore`` at its URL, password redacted; no file."""
        return StoreDescription(label=type(self).__name__, target=self._target)

    async def open(self) -> None:
        """Connect, refuse a newer schema, and apply pending migrations."""
        if self._pool is not None:
            return
        try:
            import psycopg
            from psycopg_pool import AsyncConnectionPool
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise MissingDependencyError("the Postgres backend", "postgres") from exc
        try:
            # One direct attempt first: a pool would retry a refused connection until timeout.
            probe = await psycopg.AsyncConnection.connect(self._dsn, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreUnavailableError(self._target, f"cannot connect: {exc}") from None
        await probe.close()
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self._dsn,
            min_size=self._pool_size[0],
            max_size=self._pool_size[1],
            kwargs={"autocommit": True},
            # Test each connection as it is handed out, so one the server dropped (a
            # restart, a failover, an idle timeout) is replaced instead of failing a call.
            check=AsyncConnectionPool.check_connection,
            open=False,
        )
        try:
            await pool.open(wait=True, timeout=10)
        except Exception as exc:
            await pool.close()
            raise StoreUnavailableError(self._target, f"cannot connect: {exc}") from None
        try:
            async with pool.connection() as conn:
                await migrate(conn, self._schema, self._target)
        except psycopg.Error as exc:
            await pool.close()
            raise StoreUnavailableError(self._target, f"cannot prepare schema: {exc}") from None
        except BaseException:
            await pool.close()
            raise
        self._pool = pool
        async with self._reading() as conn:
            cursor = await conn.execute(f"SELECT max(created_at) FROM {self._table}")
            newest = await cursor.fetchone()
        if newest is not None and newest[0] is not None:
            self._clock.observe(newest[0])
        await self._start_journal()

    async def aclose(self) -> None:
        """Close every pooled connection; later calls raise StoreUnavailableError."""
        await self._stop_journal()
        await self._listener.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    @property
    def _is_open(self) -> bool:
        return self._pool is not None

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection for one call; a database failure is StoreUnavailableError."""
        import psycopg
        from psycopg_pool import PoolTimeout

        self._check_open()
        assert self._pool is not None  # what _check_open just checked
        try:
            async with self._pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as exc:
            raise StoreUnavailableError(self._target, str(exc).strip()) from exc

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[AsyncConnection[Any]]:
        async with self._reading() as conn, conn.transaction():
            yield conn

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """Insert records exactly as given, atomically; identical existing ones are skipped."""
        from psycopg.errors import UniqueViolation

        try:
            return await super().import_records(records)
        except UniqueViolation:
            # A concurrent import inserted some of these ids after our look-up (FOR UPDATE
            # cannot lock rows that do not exist yet). It has committed now, so one more
            # attempt sees its rows: identical ones are skipped, different ones conflict.
            return await super().import_records(records)

    async def _fetch_records(
        self, handle: AsyncConnection[Any], ids: Sequence[str]
    ) -> dict[str, MemoryRecord]:
        from psycopg.pq import TransactionStatus

        # Inside a write transaction (an import), lock what we read until it commits.
        locking = handle.info.transaction_status == TransactionStatus.INTRANS
        cursor = await handle.execute(
            f"SELECT {_COLUMNS} FROM {self._table} WHERE id = ANY(%s)"
            + (" ORDER BY id FOR UPDATE" if locking else ""),
            (list(ids),),
        )
        return {row[0]: _record(row) for row in await cursor.fetchall()}

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

    async def _insert(self, handle: AsyncConnection[Any], records: Sequence[MemoryRecord]) -> None:
        async with handle.cursor() as cursor:
            await cursor.executemany(self._insert_sql, [_row_params(r) for r in records])

    async def _update(self, handle: AsyncConnection[Any], id: str, changes: RecordChanges) -> None:
        names = sorted(changes)  # field names from the base class, never user text
        assignments = ", ".join(f"{name} = %s" for name in names)
        await handle.execute(
            f"UPDATE {self._table} SET {assignments} WHERE id = %s",
            [*(changes[name] for name in names), id],
        )

    async def _delete(self, id: str) -> None:
        """Postgres keeps dead row versions until VACUUM; see docs/postgres.md."""
        async with self._writing() as conn:
            before = (await self._fetch_records(conn, [id])).get(id) if self._journal else None
            await conn.execute(f"DELETE FROM {self._table} WHERE id = %s", (id,))
            await self._journal_delete(conn, id, before)

    async def _export(self, scope: Mapping[str, str]) -> AsyncIterator[MemoryRecord]:
        """Oldest first, from one snapshot (a REPEATABLE READ transaction)."""
        from psycopg.types.json import Jsonb

        async with self._reading() as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            after: tuple[Any, str] | None = None
            while True:
                keyset = "" if after is None else "AND (created_at, id) > (%s, %s)"
                cursor = await conn.execute(
                    f"SELECT {_COLUMNS} FROM {self._table} WHERE scope @> %s {keyset} "
                    "ORDER BY created_at, id LIMIT %s",
                    [Jsonb(dict(scope)), *(after or ()), _EXPORT_PAGE],
                )
                rows = await cursor.fetchall()
                for row in rows:
                    yield _record(row)
                if len(rows) < _EXPORT_PAGE:
                    return
                after = (rows[-1][6], rows[-1][0])

    async def _search(
        self, query: MemorySearchQuery, terms: Sequence[str], now: datetime
    ) -> list[MemoryHit]:
        """Filter (S7–S9), then rank by weighted text rank or list by recency (S10–S12)."""
        from psycopg.types.json import Jsonb

        where: list[str] = []
        params: list[Any] = []
        if query.scope:
            where.append("scope @> %s")
            params.append(Jsonb(query.scope))
        if query.kinds is not None:
            where.append("kind = ANY(%s)")
            params.append(list(query.kinds))
        if query.tags:
            where.append("tags @> %s::text[]")
            params.append(list(query.tags))
        if not query.include_invalidated:
            where.append("invalid_at IS NULL")
        if not query.include_expired:
            where.append("(expires_at IS NULL OR expires_at > %s)")
            params.append(now)
        if query.is_listing:
            sql = (
                f"SELECT {_COLUMNS}, NULL FROM {self._table} "
                f"WHERE {' AND '.join(where) or 'TRUE'} "
                "ORDER BY created_at DESC, id DESC LIMIT %s"
            )
            async with self._reading() as conn:
                cursor = await conn.execute(sql, [*params, query.limit])
                rows = await cursor.fetchall()
            return [MemoryHit(record=_record(row[:-1]), score=None) for row in rows]
        operands = [_tsquery_operand(term) for term in terms]
        async with self._reading() as conn:
            idf = await self._idf(conn, operands)
            score = " + ".join(
                f"%s * ts_rank(search_text, to_tsquery({self._config}, %s))" for _ in operands
            )
            score_params: list[Any] = []
            for operand in operands:
                score_params += [idf[operand], operand]
            sql = (
                f"SELECT {_COLUMNS}, ({score}) AS score FROM {self._table} "
                f"WHERE search_text @@ to_tsquery({self._config}, %s) "
                f"{''.join(' AND ' + clause for clause in where)} "
                "ORDER BY score DESC, created_at DESC, id DESC LIMIT %s"
            )
            cursor = await conn.execute(
                sql, [*score_params, " | ".join(operands), *params, query.limit]
            )
            rows = await cursor.fetchall()
        return [MemoryHit(record=_record(row[:-1]), score=float(row[-1])) for row in rows]

    async def _idf(self, conn: AsyncConnection[Any], operands: list[str]) -> dict[str, float]:
        counts = ", ".join(
            f"(SELECT count(*) FROM {self._table} "
            f"WHERE search_text @@ to_tsquery({self._config}, %s))"
            for _ in operands
        )
        cursor = await conn.execute(
            f"SELECT (SELECT count(*) FROM {self._table}), {counts}", operands
        )
        row = await cursor.fetchone()
        assert row is not None
        total = max(int(row[0]), 1)
        return {
            operand: lucene_idf(total, int(containing))
            for operand, containing in zip(operands, row[1:], strict=True)
        }

    # --- the journal extension's primitives ----------------------------------------------

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


def _row_params(record: MemoryRecord) -> tuple[Any, ...]:
    from psycopg.types.json import Jsonb

    data = record.model_dump(mode="json")
    return (
        record.id,
        Jsonb(record.scope),
        record.kind,
        record.content,
        list(record.tags),
        None if record.provenance is None else Jsonb(data["provenance"]),
        record.created_at,
        record.updated_at,
        record.invalid_at,
        record.invalid_reason,
        record.superseded_by,
        record.expires_at,
        None if record.target is None else Jsonb(data["target"]),
        None if record.payload is None else Jsonb(record.payload),
        Jsonb(data["supports"]),
        _index_text(record.content),
    )


def _record(row: Sequence[Any]) -> MemoryRecord:
    (
        record_id,
        scope,
        kind,
        content,
        tags,
        provenance,
        created_at,
        updated_at,
        invalid_at,
        invalid_reason,
        superseded_by,
        expires_at,
        target,
        payload,
        supports,
    ) = row
    fields: dict[str, Any] = {
        "id": record_id,
        "scope": scope,
        "kind": kind,
        "content": content,
        "tags": tags,
        "provenance": provenance,
        "created_at": created_at,
        "updated_at": updated_at,
        "invalid_at": invalid_at,
        "invalid_reason": invalid_reason,
        "superseded_by": superseded_by,
        "expires_at": expires_at,
        "target": target,
        "payload": payload,
        "supports": supports,
    }
    return MemoryRecord.model_validate(fields)
