"""``SqliteMemoryStore``: the bundled, durable backend on SQLite FTS5 (via aiosqlite).

One database file per store, owned by memory alone. Keyword search is FTS5 ranked by
bm25; query text is tokenised and every token quoted, and the expression is always a
bound parameter. Scope pairs and tags sit in indexed side tables, so a subset filter
is answered from indexes, never by scanning JSON. Every write is one ``BEGIN IMMEDIATE``
transaction (WAL, ``synchronous=FULL``), so a batch lands whole or not at all, and of
two concurrent supersedes of one record exactly one wins, across connections and
processes. Deleted content leaves the file: ``secure_delete`` zeroes freed space and
the FTS5 index is merged after each delete so no segment keeps the forgotten terms.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

import aiosqlite

from recallstore._text import fts5_words, query_terms
from recallstore.backends import _sqlite_schema as schema
from recallstore.errors import (
    MemoryConflictError,
    MemoryNotFoundError,
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
    format_timestamp,
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

__all__ = ["SqliteMemoryStore"]

BUSY_TIMEOUT_SECONDS: Final = 10.0
"""How long a call waits for another connection's write lock before failing."""

_COLUMNS: Final = (
    "id, kind, content, scope, tags, provenance, target, payload, supports, "
    "created_at, updated_at, invalid_at, invalid_reason, superseded_by, expires_at"
)
_EXPORT_PAGE: Final = 500
_RECORD_COLUMNS: Final = ", ".join(f"r.{name.strip()}" for name in _COLUMNS.split(","))
_JSON_COLUMNS: Final = frozenset({"scope", "tags", "provenance", "target", "payload", "supports"})
_COLUMN_NAMES: Final = tuple(name.strip() for name in _COLUMNS.split(","))


class SqliteMemoryStore(StoreLifecycle):
    """A durable ``MemoryStore`` in one SQLite file; several stores may share the file.

    Use as ``async with SqliteMemoryStore(path) as store:`` (or ``await store.open()``
    and ``await store.aclose()``). Opening creates the file and migrates its schema;
    a file from a newer recallstore raises
    :class:`~recallstore.errors.StoreIncompatibleError` and is left untouched.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock = utc_now,
        _tokenizer: Literal["porter", "unicode61"] = schema.DEFAULT_TOKENIZER,
        _synchronous: Literal["FULL", "NORMAL"] = "FULL",
    ) -> None:
        # _tokenizer applies only when the file is created; _synchronous is for the
        # benchmark's FULL-versus-NORMAL comparison. Neither is public API.
        if _tokenizer not in schema.TOKENIZERS:
            raise ValueError(f"unknown tokenizer {_tokenizer!r}")
        if _synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"unknown synchronous mode {_synchronous!r}")
        # Absolute, so SQLite never reads a name like ":memory:" as a non-durable database.
        self.path = Path(path).expanduser().absolute()
        self._now = clock
        self._clock = MonotonicClock(clock)
        self._tokenizer = _tokenizer
        self._synchronous = _synchronous
        self._conn: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"SqliteMemoryStore({str(self.path)!r})"

    @property
    def _target(self) -> str:
        return str(self.path)

    async def open(self) -> None:
        """Open (creating and migrating if needed) the database; a no-op when open.

        Raises :class:`StoreUnavailableError` with the reason when the file cannot be
        used, and :class:`StoreIncompatibleError` when its schema is newer than ours.
        """
        async with self._lock:
            if self._conn is not None:
                return
            probe_uri = schema.check_location(self.path)
            if probe_uri is not None:
                await schema.probe_version(self._target, probe_uri)
            try:
                conn = await aiosqlite.connect(
                    self.path, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS
                )
            except sqlite3.Error as exc:
                raise StoreUnavailableError(self._target, f"cannot open: {exc}") from exc
            try:
                await self._configure(conn)
                newest = await _fetchone(conn, "SELECT max(created_at) FROM memory_records")
            except BaseException as exc:
                await conn.close()
                if isinstance(exc, sqlite3.Error):
                    raise StoreUnavailableError(self._target, f"cannot open: {exc}") from exc
                raise
            if newest is not None and newest[0] is not None:
                self._clock.observe(datetime.fromisoformat(newest[0]))
            self._conn = conn

    async def _configure(self, conn: aiosqlite.Connection) -> None:
        # Read the version before anything that writes: even journal_mode=WAL writes
        # the header, and a newer file must stay unchanged.
        found = await schema.read_user_version(conn)
        if found > schema.SCHEMA_VERSION:
            raise StoreIncompatibleError(self._target, found, schema.SCHEMA_VERSION)
        await _run(conn, f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        mode = await _enable_wal(conn)
        if mode is None or str(mode[0]).lower() != "wal":
            raise StoreUnavailableError(self._target, f"cannot enable WAL (journal_mode={mode})")
        await _run(conn, f"PRAGMA synchronous = {self._synchronous}")
        await _run(conn, "PRAGMA foreign_keys = ON")
        await _run(conn, "PRAGMA secure_delete = ON")
        await schema.migrate(conn, self._target, self._tokenizer)

    async def aclose(self) -> None:
        """Close the connection; later calls raise :class:`StoreUnavailableError`."""
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                await conn.close()

    def capabilities(self) -> MemoryStoreCapabilities:
        """Keyword search (FTS5 bm25), durable, import and export."""
        return MemoryStoreCapabilities(
            search="keyword",
            durable=True,
            extensions=frozenset({IMPORT_EXTENSION, EXPORT_EXTENSION}),
        )

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """Insert records exactly as given, atomically; identical existing ones are skipped."""
        check_import_batch(records)
        if not records:
            self._check_open()
            return 0
        async with self._transaction() as conn:
            stored = {}
            for record in records:
                row = await _fetchone(
                    conn, f"SELECT {_COLUMNS} FROM memory_records WHERE id = ?", (record.id,)
                )
                if row is not None:
                    stored[record.id] = _record_from_row(row)
            fresh = records_to_import(records, stored)
            await _insert_records(conn, fresh)
        self._clock.observe(newest_timestamp(records))
        return len(fresh)

    async def export_records(
        self, scope: Mapping[str, str] | None = None
    ) -> AsyncIterator[MemoryRecord]:
        """Every record whose scope contains ``scope``, oldest first, a page at a time.

        Pages are keyed on ``(created_at, id)``, so each record is yielded once even when
        others are written meanwhile; the connection is free between pages.
        """
        scope_filter = MemorySearchQuery(scope=dict(scope or {})).scope
        conditions = [
            "EXISTS (SELECT 1 FROM memory_scope s WHERE s.record_seq = r.seq "
            "AND s.key = ? AND s.value = ?)"
        ] * len(scope_filter)
        scope_params = [part for pair in scope_filter.items() for part in pair]
        after: tuple[str, str] | None = None
        while True:
            keyset = ["(r.created_at, r.id) > (?, ?)"] if after is not None else []
            where = " AND ".join([*conditions, *keyset]) or "1"
            async with (
                self._connection() as conn,
                conn.execute(
                    f"SELECT {_RECORD_COLUMNS} FROM memory_records r WHERE {where} "
                    "ORDER BY r.created_at, r.id LIMIT ?",
                    [*scope_params, *(after or ()), _EXPORT_PAGE],
                ) as cursor,
            ):
                rows = list(await cursor.fetchall())
            for row in rows:
                yield _record_from_row(row)
            if len(rows) < _EXPORT_PAGE:
                return
            last = rows[-1]
            after = (last[_COLUMN_NAMES.index("created_at")], last[0])

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[aiosqlite.Connection]:
        """The open connection, held exclusively for one call, with errors translated."""
        async with self._lock:
            if self._conn is None:
                raise StoreUnavailableError(
                    self._target, "the store is not open (use 'async with' or 'await open()')"
                )
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreUnavailableError(self._target, str(exc)) from exc

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed on success, else rolled back."""
        async with self._connection() as conn:
            try:
                await _run(conn, "BEGIN IMMEDIATE")
                # Other connections may have written newer records since we opened.
                newest = await _fetchone(conn, "SELECT max(created_at) FROM memory_records")
                if newest is not None and newest[0] is not None:
                    self._clock.observe(datetime.fromisoformat(newest[0]))
                yield conn
                await _run(conn, "COMMIT")
            except BaseException:
                # A cancelled await does not stop a statement already queued on aiosqlite's
                # thread (BEGIN or COMMIT may still run), so roll back on that thread, behind
                # it: queued before the lock is released, and a no-op when no transaction
                # is open (SQLite may have rolled back by itself, e.g. on a full disk).
                await conn.rollback()
                raise

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """Write all inputs in one transaction, applying ``supersedes`` in it (S1–S3)."""
        if not inputs:
            self._check_open()
            return []
        async with self._transaction() as conn:
            targets: set[str] = set()
            for inp in inputs:
                if inp.supersedes is None:
                    continue
                row = await _fetchone(
                    conn, "SELECT invalid_at FROM memory_records WHERE id = ?", (inp.supersedes,)
                )
                if row is None:
                    raise MemoryNotFoundError(inp.supersedes)
                if row[0] is not None or inp.supersedes in targets:
                    raise MemoryConflictError(inp.supersedes, "it is already invalidated")
                targets.add(inp.supersedes)
            created: list[MemoryRecord] = []
            for inp in inputs:
                record = record_from_input(inp, record_id=new_record_id(), now=self._clock())
                created.append(record)
            await _insert_records(conn, created)
            for inp, record in zip(inputs, created, strict=True):
                if inp.supersedes is None:
                    continue
                stamp = format_timestamp(record.created_at)
                async with conn.execute(
                    "UPDATE memory_records SET invalid_at = ?, superseded_by = ?, updated_at = ? "
                    "WHERE id = ? AND invalid_at IS NULL",
                    (stamp, record.id, stamp, inp.supersedes),
                ) as cursor:
                    if cursor.rowcount != 1:
                        raise MemoryConflictError(inp.supersedes, "it is already invalidated")
            return created

    async def get(self, id: str) -> MemoryRecord | None:
        """The record, whatever its validity or expiry (S6); None when absent."""
        if not is_storable_id(id):
            self._check_open()
            return None
        async with self._connection() as conn:
            row = await _fetchone(
                conn, f"SELECT {_COLUMNS} FROM memory_records WHERE id = ?", (id,)
            )
        return None if row is None else _record_from_row(row)

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        """Set ``invalid_at``/``invalid_reason``; a no-op when already invalid (S4)."""
        reason = check_invalid_reason(reason)
        if not is_storable_id(id):
            self._check_open()
            raise MemoryNotFoundError(id)
        async with self._transaction() as conn:
            row = await _fetchone(conn, "SELECT invalid_at FROM memory_records WHERE id = ?", (id,))
            if row is None:
                raise MemoryNotFoundError(id)
            if row[0] is not None:
                return
            stamp = format_timestamp(self._clock())
            await _run(
                conn,
                "UPDATE memory_records SET invalid_at = ?, invalid_reason = ?, updated_at = ? "
                "WHERE id = ? AND invalid_at IS NULL",
                (stamp, reason, stamp, id),
            )

    async def delete(self, id: str) -> None:
        """Forget the record and its index entries, and scrub them from the file (S5).

        The FTS5 index is merged into one segment so no older segment keeps the
        deleted terms, and the WAL is checkpointed so its old page images go too.
        The merge costs time proportional to the index size (see docs/sqlite.md).
        """
        if not is_storable_id(id):
            self._check_open()
            return
        async with self._transaction() as conn:
            async with conn.execute("DELETE FROM memory_records WHERE id = ?", (id,)) as cursor:
                deleted = cursor.rowcount
            if deleted:
                await _run(conn, "INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        if deleted:
            async with self._connection() as conn:
                # Best effort: a concurrent reader may keep old frames until the next one.
                await _run(conn, "PRAGMA wal_checkpoint(TRUNCATE)")

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """Filter (S7–S9), then rank by bm25 or list by recency (S10–S13)."""
        expression = None if query.is_listing else _fts_expression(query.query or "")
        if _matches_nothing(query, expression):
            self._check_open()
            return []
        filters = _filters(query)
        async with self._connection() as conn:
            driver = await _choose_driver(conn, filters)
            sql, params = _search_sql(query, expression, self._now(), filters, driver)
            rows = await conn.execute_fetchall(sql, params)
        hits = []
        for row in rows:
            score = None if query.is_listing else -float(row[len(_COLUMN_NAMES)])
            hits.append(MemoryHit(record=_record_from_row(row), score=score))
        return hits

    def _check_open(self) -> None:
        if self._conn is None:
            raise StoreUnavailableError(
                self._target, "the store is not open (use 'async with' or 'await open()')"
            )


def _fts_expression(text: str) -> str | None:
    """An FTS5 expression matching any token of ``text``; None when it has no tokens.

    Each token is a quoted string, so no character of user text can act as FTS5 syntax.
    """
    terms = query_terms(text)
    if not terms:
        return None
    # query_terms case-folds and applies NFKD ("Straße" -> "strasse", "ﬁ" -> "fi"), which
    # FTS5's unicode61 does not do to indexed text; also ask for the word as FTS5 folds it.
    variants = dict.fromkeys(terms)
    for word in fts5_words(text):
        variants.setdefault(word)
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in variants)


# A subset filter is a list of index lookups the record must all pass: one per scope
# pair (memory_scope) and one per tag (memory_tags).
_Filter = tuple[Literal["scope", "tag"], tuple[str, ...]]
_LOOKUP: Final = {
    "scope": "SELECT record_seq FROM memory_scope WHERE key = ? AND value = ?",
    "tag": "SELECT record_seq FROM memory_tags WHERE tag = ?",
}
_CHECK: Final = {
    "scope": (
        "EXISTS (SELECT 1 FROM memory_scope WHERE record_seq = r.seq AND key = ? AND value = ?)"
    ),
    "tag": "EXISTS (SELECT 1 FROM memory_tags WHERE record_seq = r.seq AND tag = ?)",
}
DRIVER_CAP: Final = 2_000
"""Above this many matching rows a filter is too broad to drive a query from."""


def _filters(query: MemorySearchQuery) -> list[_Filter]:
    scope: list[_Filter] = [("scope", (key, value)) for key, value in query.scope.items()]
    return scope + [("tag", (tag,)) for tag in query.tags or ()]


async def _choose_driver(conn: aiosqlite.Connection, filters: list[_Filter]) -> int | None:
    """The most selective filter (capped count), or None when every one is broad.

    The query then starts from that filter's index range and checks the others by
    primary key; when all are broad it walks the recency index (or the FTS matches)
    and checks each filter per row, stopping at the limit.
    """
    if not filters:
        return None
    counts = ", ".join(f"(SELECT count(*) FROM ({_LOOKUP[kind]} LIMIT ?))" for kind, _ in filters)
    params = [value for _, values in filters for value in (*values, DRIVER_CAP)]
    row = await _fetchone(conn, f"SELECT {counts}", params)
    assert row is not None
    smallest = min(range(len(filters)), key=lambda index: int(row[index]))
    return smallest if int(row[smallest]) < DRIVER_CAP else None


def _matches_nothing(query: MemorySearchQuery, expression: str | None) -> bool:
    """True when ``query`` returns [] without looking: limit 0, ``kinds=[]``, no words."""
    if query.limit == 0 or (query.kinds is not None and not query.kinds):
        return True
    return not query.is_listing and expression is None


def _search_sql(
    query: MemorySearchQuery,
    expression: str | None,
    now: datetime,
    filters: list[_Filter],
    driver: int | None,
) -> tuple[str, list[Any]]:
    """The SELECT for ``query`` (which must not match nothing) and its parameters.

    ``expression`` is the query's FTS5 expression (None for a listing); ``driver``
    indexes the filter to start from (see :func:`_choose_driver`).
    """
    where: list[str] = []
    params: list[Any] = []
    for index, (kind, values) in enumerate(filters):
        where.append(f"r.seq IN ({_LOOKUP[kind]})" if index == driver else _CHECK[kind])
        params.extend(values)
    if query.kinds is not None:
        kinds = sorted(set(query.kinds))
        where.append(f"r.kind IN ({', '.join('?' * len(kinds))})")
        params.extend(kinds)
    if not query.include_invalidated:
        where.append("r.invalid_at IS NULL")
    if not query.include_expired:
        where.append("(r.expires_at IS NULL OR r.expires_at > ?)")
        params.append(format_timestamp(now))
    if query.is_listing:
        condition = f"WHERE {' AND '.join(where)}" if where else ""
        sql = (
            f"SELECT {_RECORD_COLUMNS} FROM memory_records AS r {condition} "
            "ORDER BY r.created_at DESC, r.id DESC LIMIT ?"
        )
        return sql, [*params, query.limit]
    if expression is None:
        raise ValueError("a query without words matches nothing; check _matches_nothing first")
    condition = " AND ".join(["memory_fts MATCH ?", *where])
    sql = (
        f"SELECT {_RECORD_COLUMNS}, bm25(memory_fts) AS rank_score "
        "FROM memory_fts JOIN memory_records AS r ON r.seq = memory_fts.rowid "
        f"WHERE {condition} ORDER BY rank_score, r.created_at DESC, r.id DESC LIMIT ?"
    )
    return sql, [expression, *params, query.limit]


async def _insert_records(conn: aiosqlite.Connection, records: Sequence[MemoryRecord]) -> None:
    """Insert records with their scope and tag index rows (the FTS row comes by trigger)."""
    await conn.executemany(
        f"INSERT INTO memory_records ({_COLUMNS}) VALUES ({', '.join('?' * len(_COLUMN_NAMES))})",
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
    for name in _COLUMN_NAMES:
        value = data[name]
        if name in _JSON_COLUMNS and value is not None:
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        row.append(value)
    return tuple(row)


def _record_from_row(row: Iterable[Any]) -> MemoryRecord:
    data: dict[str, Any] = {}
    for name, value in zip(_COLUMN_NAMES, row, strict=False):
        data[name] = json.loads(value) if name in _JSON_COLUMNS and value is not None else value
    return MemoryRecord.model_validate(data)


async def _enable_wal(conn: aiosqlite.Connection) -> sqlite3.Row | tuple[Any, ...] | None:
    """Switch a file to WAL, waiting out other connections that are doing the same.

    Converting a new file needs an exclusive lock, and SQLite answers "database is
    locked" at once, without the busy handler, while another connection converts or
    migrates it; so retry with a short back-off up to the busy timeout.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BUSY_TIMEOUT_SECONDS
    delay = 0.005
    while True:
        try:
            return await _fetchone(conn, "PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or loop.time() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)


async def _run(conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> None:
    # Closing the cursor at once ends the statement, so it holds no read snapshot.
    async with conn.execute(sql, params):
        pass


async def _fetchone(
    conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()
) -> sqlite3.Row | tuple[Any, ...] | None:
    async with conn.execute(sql, params) as cursor:
        row: sqlite3.Row | tuple[Any, ...] | None = await cursor.fetchone()
        return row
