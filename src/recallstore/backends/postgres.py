"""``PostgresMemoryStore``: the production tier, for deployments that outgrow one machine.

Same protocol and conformance kit as the SQLite backend. Text search uses a stored
``tsvector`` with a GIN index over the same tokens the other backends index (English
stemming, no stop words); subset scope filters use ``jsonb @>`` on a GIN index.
Postgres' own ``ts_rank`` has no notion of term rarity, so relevance here is BM25-like:
each matched term's ``ts_rank`` weighted by its inverse document frequency.

Needs the ``postgres`` extra: ``pip install 'recallstore[postgres]'``.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from recallstore._text import query_terms, tokenize
from recallstore.errors import (
    ConfigurationError,
    MemoryConflictError,
    MemoryNotFoundError,
    MissingDependencyError,
    StoreIncompatibleError,
    StoreUnavailableError,
)
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
    check_invalid_reason,
)
from recallstore.store import (
    EXPORT_EXTENSION,
    IMPORT_EXTENSION,
    Clock,
    MonotonicClock,
    StoreLifecycle,
    check_import_batch,
    is_storable_id,
    new_record_id,
    newest_timestamp,
    record_from_input,
    records_to_import,
    utc_now,
)

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


def _migrations(schema: str) -> list[list[str]]:
    """The append-only migration ladder: entry ``n`` upgrades version ``n`` to ``n + 1``."""
    return [
        [
            f"CREATE TEXT SEARCH DICTIONARY {schema}.english_stem_all "
            "(TEMPLATE = snowball, LANGUAGE = english)",
            f"CREATE TEXT SEARCH CONFIGURATION {schema}.memory_text (PARSER = pg_catalog.default)",
            f"ALTER TEXT SEARCH CONFIGURATION {schema}.memory_text ADD MAPPING FOR "
            "asciiword, word, numword, asciihword, hword, numhword, hword_asciipart, "
            f"hword_part, hword_numpart WITH {schema}.english_stem_all",
            f"ALTER TEXT SEARCH CONFIGURATION {schema}.memory_text ADD MAPPING FOR "
            "int, uint, float, sfloat, version WITH simple",
            f"""CREATE TABLE {schema}.memory_records (
                id text PRIMARY KEY,
                scope jsonb NOT NULL,
                kind text NOT NULL,
                content text NOT NULL,
                tags text[] NOT NULL DEFAULT '{{}}',
                provenance jsonb,
                created_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL,
                invalid_at timestamptz,
                invalid_reason text,
                superseded_by text,
                expires_at timestamptz,
                target jsonb,
                payload jsonb,
                supports jsonb NOT NULL DEFAULT '[]',
                search_text tsvector NOT NULL
            )""",
            f"CREATE INDEX memory_records_scope ON {schema}.memory_records "
            "USING gin (scope jsonb_path_ops)",
            f"CREATE INDEX memory_records_text ON {schema}.memory_records USING gin (search_text)",
            f"CREATE INDEX memory_records_tags ON {schema}.memory_records USING gin (tags)",
            f"CREATE INDEX memory_records_recency ON {schema}.memory_records "
            "(created_at DESC, id DESC)",
        ],
    ]


SCHEMA_VERSION = 1
"""The schema version this code writes; a newer database is refused."""


def _redact(dsn: str) -> str:
    return _PASSWORD_PARAMETER.sub(r"\1***", _PASSWORD_IN_URL.sub(r"\1:***@", dsn))


def _index_text(content: str) -> str:
    # Index our own tokens so every backend agrees on what a word is.
    return " ".join(tokenize(content))


def _tsquery_operand(term: str) -> str:
    # Terms are runs of letters and digits only (see _text), so quoting cannot be escaped.
    return f"'{term}'"


class PostgresMemoryStore(StoreLifecycle):
    """A ``MemoryStore`` on PostgreSQL (13+), in its own schema of one database."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "recallstore",
        clock: Clock = utc_now,
        min_connections: int = 1,
        max_connections: int = 8,
    ) -> None:
        if not _IDENTIFIER.match(schema):
            raise ConfigurationError(
                f"schema must be a lower-case SQL identifier (letters, digits, _), got {schema!r}"
            )
        self._dsn = dsn
        self._target = _redact(dsn)
        self._schema = schema
        self._table = f"{schema}.memory_records"
        self._config = f"'{schema}.memory_text'::regconfig"
        self._clock = MonotonicClock(clock)
        self._now = clock
        self._pool_size = (min_connections, max_connections)
        self._pool: AsyncConnectionPool[Any] | None = None
        self._insert_sql = (
            f"INSERT INTO {self._table} ({_COLUMNS}, search_text) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            f"to_tsvector({self._config}, %s))"
        )

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
                await self._migrate(conn)
        except psycopg.Error as exc:
            await pool.close()
            raise StoreUnavailableError(self._target, f"cannot prepare schema: {exc}") from None
        except BaseException:
            await pool.close()
            raise
        self._pool = pool
        newest = await self._fetch_one(f"SELECT max(created_at) FROM {self._table}")
        if newest is not None and newest[0] is not None:
            self._clock.observe(newest[0])

    async def aclose(self) -> None:
        """Close every pooled connection; later calls raise StoreUnavailableError."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def _installed_version(self, conn: AsyncConnection[Any]) -> int:
        cursor = await conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (f"{self._schema}.schema_migrations",)
        )
        row = await cursor.fetchone()
        if row is None or not row[0]:
            return 0
        cursor = await conn.execute(
            f"SELECT coalesce(max(version), 0) FROM {self._schema}.schema_migrations"
        )
        row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0

    async def _migrate(self, conn: AsyncConnection[Any]) -> None:
        # Look before writing anything: a newer database is left exactly as it is.
        found = await self._installed_version(conn)
        if found > SCHEMA_VERSION:
            raise StoreIncompatibleError(self._target, found, SCHEMA_VERSION)
        if found == SCHEMA_VERSION:
            return
        async with conn.transaction():
            # One migrator at a time per schema, across processes.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self._schema,))
            await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self._schema}")
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self._schema}.schema_migrations "
                "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            found = await self._installed_version(conn)
            if found > SCHEMA_VERSION:
                raise StoreIncompatibleError(self._target, found, SCHEMA_VERSION)
            for version, steps in enumerate(_migrations(self._schema)[found:], start=found + 1):
                for statement in steps:
                    await conn.execute(statement)
                await conn.execute(
                    f"INSERT INTO {self._schema}.schema_migrations (version) VALUES (%s)",
                    (version,),
                )

    def _require_pool(self) -> AsyncConnectionPool[Any]:
        if self._pool is None:
            raise StoreUnavailableError(self._target, "the store is not open")
        return self._pool

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection for one call; a database failure is StoreUnavailableError."""
        import psycopg
        from psycopg_pool import PoolTimeout

        pool = self._require_pool()
        try:
            async with pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as exc:
            raise StoreUnavailableError(self._target, str(exc).strip()) from exc

    async def _fetch_one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        async with self._connection() as conn:
            cursor = await conn.execute(sql, params)
            row: tuple[Any, ...] | None = await cursor.fetchone()
            return row

    def capabilities(self) -> MemoryStoreCapabilities:
        """Keyword search (stemmed, rarity-weighted), durable, import and export."""
        return MemoryStoreCapabilities(
            search="keyword",
            durable=True,
            extensions=frozenset({IMPORT_EXTENSION, EXPORT_EXTENSION}),
        )

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """Insert records exactly as given, atomically; identical existing ones are skipped."""
        from psycopg.errors import UniqueViolation

        check_import_batch(records)
        if not records:
            self._require_pool()
            return 0
        try:
            fresh = await self._import_once(records)
        except UniqueViolation:
            # A concurrent import inserted some of these ids after our look-up (FOR UPDATE
            # cannot lock rows that do not exist yet). It has committed now, so one more
            # attempt sees its rows: identical ones are skipped, different ones conflict.
            fresh = await self._import_once(records)
        self._clock.observe(newest_timestamp(records))
        return len(fresh)

    async def _import_once(self, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        async with self._connection() as conn, conn.transaction():
            cursor = await conn.execute(
                f"SELECT {_COLUMNS} FROM {self._table} WHERE id = ANY(%s) FOR UPDATE",
                ([record.id for record in records],),
            )
            stored = {row[0]: _record(row) for row in await cursor.fetchall()}
            fresh = records_to_import(records, stored)
            async with conn.cursor() as insert:
                await insert.executemany(self._insert_sql, [_row_params(r) for r in fresh])
        return fresh

    async def export_records(
        self, scope: Mapping[str, str] | None = None
    ) -> AsyncIterator[MemoryRecord]:
        """Every record whose scope contains ``scope``, oldest first, from one snapshot."""
        from psycopg.types.json import Jsonb

        scope_filter = MemorySearchQuery(scope=dict(scope or {})).scope
        async with self._connection() as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            after: tuple[Any, str] | None = None
            while True:
                keyset = "" if after is None else "AND (created_at, id) > (%s, %s)"
                cursor = await conn.execute(
                    f"SELECT {_COLUMNS} FROM {self._table} WHERE scope @> %s {keyset} "
                    "ORDER BY created_at, id LIMIT %s",
                    [Jsonb(scope_filter), *(after or ()), _EXPORT_PAGE],
                )
                rows = await cursor.fetchall()
                for row in rows:
                    yield _record(row)
                if len(rows) < _EXPORT_PAGE:
                    return
                after = (rows[-1][6], rows[-1][0])

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """Write all inputs in one transaction, applying ``supersedes`` in it (S1, S3)."""
        if not inputs:
            self._require_pool()
            return []
        targets = [inp.supersedes for inp in inputs if inp.supersedes is not None]
        for target in targets:
            if not is_storable_id(target):
                self._require_pool()
                raise MemoryNotFoundError(target)
        async with self._connection() as conn, conn.transaction():
            if targets:
                # Row locks serialise concurrent supersedes of one record: the loser sees it
                # invalidated once the winner commits.
                cursor = await conn.execute(
                    f"SELECT id, invalid_at FROM {self._table} WHERE id = ANY(%s) "
                    "ORDER BY id FOR UPDATE",
                    (targets,),
                )
                state = {row[0]: row[1] for row in await cursor.fetchall()}
                seen: set[str] = set()
                for target in targets:
                    if target not in state:
                        raise MemoryNotFoundError(target)
                    if state[target] is not None or target in seen:
                        raise MemoryConflictError(target, "it is already invalidated")
                    seen.add(target)
            created: list[MemoryRecord] = []
            for inp in inputs:
                now = self._clock()
                record = record_from_input(inp, record_id=new_record_id(), now=now)
                await conn.execute(self._insert_sql, _row_params(record))
                if inp.supersedes is not None:
                    await conn.execute(
                        f"UPDATE {self._table} SET invalid_at = %s, superseded_by = %s, "
                        "updated_at = %s WHERE id = %s",
                        (now, record.id, now, inp.supersedes),
                    )
                created.append(record)
            return created

    async def get(self, id: str) -> MemoryRecord | None:
        """The record, whatever its validity (S6)."""
        if not is_storable_id(id):
            self._require_pool()
            return None
        row = await self._fetch_one(f"SELECT {_COLUMNS} FROM {self._table} WHERE id = %s", (id,))
        return None if row is None else _record(row)

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        """Set ``invalid_at``/``invalid_reason``; idempotent (S4)."""
        reason = check_invalid_reason(reason)
        if not is_storable_id(id):
            self._require_pool()
            raise MemoryNotFoundError(id)
        now = self._clock()
        async with self._connection() as conn, conn.transaction():
            cursor = await conn.execute(
                f"UPDATE {self._table} SET invalid_at = %s, invalid_reason = %s, updated_at = %s "
                "WHERE id = %s AND invalid_at IS NULL RETURNING id",
                (now, reason, now, id),
            )
            if await cursor.fetchone() is not None:
                return
            cursor = await conn.execute(f"SELECT 1 FROM {self._table} WHERE id = %s", (id,))
            if await cursor.fetchone() is None:
                raise MemoryNotFoundError(id)

    async def delete(self, id: str) -> None:
        """Forget the record and its text index entry (S5).

        Postgres keeps dead row versions until VACUUM; see docs/postgres.md.
        """
        if not is_storable_id(id):
            self._require_pool()
            return
        async with self._connection() as conn:
            await conn.execute(f"DELETE FROM {self._table} WHERE id = %s", (id,))

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """Filter (S7–S9), then rank by weighted text rank or list by recency (S10–S12)."""
        from psycopg.types.json import Jsonb

        self._require_pool()
        if query.limit == 0 or (query.kinds is not None and not query.kinds):
            return []
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
            params.append(self._now())
        if query.is_listing:
            sql = (
                f"SELECT {_COLUMNS}, NULL FROM {self._table} "
                f"WHERE {' AND '.join(where) or 'TRUE'} "
                "ORDER BY created_at DESC, id DESC LIMIT %s"
            )
            async with self._connection() as conn:
                cursor = await conn.execute(sql, [*params, query.limit])
                rows = await cursor.fetchall()
            return [MemoryHit(record=_record(row[:-1]), score=None) for row in rows]
        terms = query_terms(query.query or "")
        if not terms:
            return []
        operands = [_tsquery_operand(term) for term in terms]
        async with self._connection() as conn:
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
        # Lucene's always-positive idf, as in the in-memory reference backend.
        return {
            operand: math.log(1 + (total - int(containing) + 0.5) / (int(containing) + 0.5))
            for operand, containing in zip(operands, row[1:], strict=True)
        }


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
