"""``SqliteMemoryStore``: the bundled, durable backend on SQLite FTS5 (via aiosqlite).

One database file per store, owned by memory alone. Keyword search: FTS5 finds the
records holding the query's words within the scope (scope pairs are indexed tokens), and
the ranking every keyword backend shares (``recallstore._search.query``: stop words, weighted
BM25, pseudo-relevance feedback) orders them; every token is quoted, and the expression
is always a bound parameter. Scope pairs and tags also sit in indexed side tables, so a
listing's subset filter is answered from indexes, never by scanning JSON. Every write is
one ``BEGIN IMMEDIATE`` transaction (WAL, ``synchronous=FULL``), so a batch lands whole
or not at all, and of two concurrent supersedes of one record exactly one wins, across
connections and processes. Deleted content leaves the file: ``secure_delete`` zeroes
freed space, and the FTS5 index forgets the words either at once (FTS5 ``secure-delete``,
SQLite 3.42+, the ``sqlite`` extra) or by a merge that ends the deleting transaction
(``sqlite.delete``; which SQLite runs it: ``sqlite.driver``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Final, Self

import aiosqlite

from recallstore.backends._forget_extension import ForgetsScopes, Forgotten
from recallstore.backends._forget_traces import provenance_of
from recallstore.backends._hits import scored_hit
from recallstore.backends._hybrid import HybridSearch
from recallstore.backends._journal_extension import JournalsRecalls
from recallstore.backends.base import (
    IdempotencyKey,
    RecordChanges,
    StoreDescription,
)
from recallstore.backends.journal import DEFAULT_JOURNAL, JournalSettings
from recallstore.backends.sqlite import schema as schema
from recallstore.backends.sqlite import vectors as vectors
from recallstore.backends.sqlite.commit import GroupCommit
from recallstore.backends.sqlite.connection import BUSY_TIMEOUT_SECONDS, SqliteConnection
from recallstore.backends.sqlite.delete import (
    delete_now,
    forget_now,
)
from recallstore.backends.sqlite.driver import SqliteDriver, choose_sqlite
from recallstore.backends.sqlite.insert import PendingInsert, insert_now
from recallstore.backends.sqlite.journal_primitives import SqliteJournalPrimitives
from recallstore.backends.sqlite.ledger import SqliteLedger
from recallstore.backends.sqlite.loop_lock import LoopLock
from recallstore.backends.sqlite.ranked import hybrid_rows_now, ranked_search
from recallstore.backends.sqlite.revisions import SqliteRevisions
from recallstore.backends.sqlite.rows import (
    COLUMN_NAMES,
    COLUMNS,
    execute_now,
    listing_hits,
    on_thread,
    record_from_row,
    rows_by_id,
    rows_by_key,
)
from recallstore.backends.sqlite.scope_split import ScopeSplits
from recallstore.backends.sqlite.search import FtsStatistics, export_page, listing_rows_now
from recallstore.backends.sqlite.wal import (
    WalScrub,
)
from recallstore.embedding import Embedder
from recallstore.errors import ConfigurationError
from recallstore.records import MemoryHit, MemoryRecord, MemorySearchQuery, format_timestamp
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

__all__ = ["BUSY_TIMEOUT_SECONDS", "SqliteMemoryStore"]

_EXPORT_PAGE: Final = 500


class SqliteMemoryStore(
    SqliteConnection,
    SqliteLedger,
    SqliteRevisions,
    SqliteJournalPrimitives,
    vectors.SqliteVectorPrimitives,
    JournalsRecalls,
    ForgetsScopes[aiosqlite.Connection],
    HybridSearch[aiosqlite.Connection],
):
    """A durable ``MemoryStore`` in one SQLite file; several stores may share the file.

    Keyword search (FTS5, ranked by weighted BM25), durable, import, export, forget,
    revise and promote. Use
    as ``async with SqliteMemoryStore(path) as store:`` (or ``await store.open()`` and
    ``await store.aclose()``). Opening creates the file and migrates its schema; a file
    from a newer recallstore raises :class:`~recallstore.errors.StoreIncompatibleError`
    and is left untouched. ``sqlite_driver`` picks the SQLite library: ``"auto"`` (a
    current SQLite from the ``sqlite`` extra when installed, else the standard
    library's), ``"stdlib"``, ``"pysqlite3"`` or ``"sqlean"``; None reads
    ``$RECALLSTORE_SQLITE_DRIVER`` (docs/deletion.md). With ``embedder=`` search is
    hybrid (docs/hybrid-search.md); ``embedder="default"`` is recallstore's own
    (the ``semantic`` extra); another embedder than the file's raises
    :class:`~recallstore.errors.EmbedderMismatchError`. With ``read_only=True`` it writes
    nothing, journals none of its reads and opens a file it cannot write
    (``sqlite.read_only``); its writes raise :class:`StoreUnavailableError`.
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
        path: str | os.PathLike[str],
        *,
        clock: Clock = utc_now,
        ids: Callable[[], str] = new_record_id,
        journal: JournalSettings | None = DEFAULT_JOURNAL,
        sqlite_driver: str | None = None,
        embedder: Embedder | str | None = None,
        read_only: bool = False,
    ) -> None:
        super().__init__(clock=clock, ids=ids, journal=journal)
        self._read_only = False
        if read_only:
            self._look_only()
        self._driver: SqliteDriver = choose_sqlite(sqlite_driver)
        self._init_hybrid(embedder)
        self._vector_cache = vectors.VectorCache(lambda: self._vector_check)
        # Absolute, so SQLite never reads a name like ":memory:" as a non-durable database.
        self.path = Path(path).expanduser().absolute()
        # Benchmarks and trials change these through backends._tuning.tune, before open().
        self._tokenizer: str = schema.DEFAULT_TOKENIZER
        self._synchronous: str = "FULL"
        self._conn: aiosqlite.Connection | None = None
        self._statistics = FtsStatistics()
        self._scope_splits = ScopeSplits()
        # A connection of its own for PRAGMA data_version (journal tailers only).
        self._watch: aiosqlite.Connection | None = None
        self._lock = LoopLock(str(self.path))
        self._commits = GroupCommit(
            self._lock, self._observe_newest_now, str(self.path), self._driver.error
        )
        # Deleted text left in the WAL because a reader held an older snapshot.
        self._wal = WalScrub(self._scrub_wal_when_free)

    def _check_open(self) -> None:
        """Also :class:`ConfigurationError` in a process forked while the store was open."""
        super()._check_open()
        refusal = self._fork_refusal()
        if refusal is not None:
            raise ConfigurationError(f"memory store {str(self.path)!r}: {refusal}")

    def _look_only(self) -> None:
        super()._look_only()
        self._read_only = True

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The store for a path, ``sqlite:///relative/path.db`` or ``sqlite:////absolute.db``."""
        if url == ":memory:":
            raise ConfigurationError(
                "memory store target ':memory:' is ambiguous; use 'memory:' for the in-memory "
                "store or a file path for SQLite"
            )
        if url[: len("sqlite:")].lower() != "sqlite:":
            return cls(Path(url))
        return cls(schema.url_path(url))

    def __repr__(self) -> str:
        return f"SqliteMemoryStore({str(self.path)!r})"

    @property
    def sqlite_driver(self) -> str:
        """The SQLite library in use: ``"stdlib"``, ``"pysqlite3"`` or ``"sqlean"``."""
        return self._driver.name

    def describe(self) -> StoreDescription:
        """``SqliteMemoryStore`` in its database file."""
        return StoreDescription(label=type(self).__name__, target=str(self.path), path=self.path)

    async def _fetch_records(
        self, handle: aiosqlite.Connection, ids: Sequence[str]
    ) -> dict[str, MemoryRecord]:
        rows = await self._commits.now(handle, rows_by_id, COLUMNS, ids)
        return {record_id: record_from_row(row) for record_id, row in rows.items()}

    async def _fetch_invalid(
        self, handle: aiosqlite.Connection, ids: Sequence[str]
    ) -> dict[str, bool]:
        rows = await self._commits.now(handle, rows_by_id, "invalid_at", ids)
        return {record_id: row[0] is not None for record_id, row in rows.items()}

    async def _fetch_keyed(
        self, handle: aiosqlite.Connection, keys: Sequence[IdempotencyKey]
    ) -> dict[IdempotencyKey, MemoryRecord]:
        # BEGIN IMMEDIATE holds the write lock, so no one takes a key before we commit;
        # through the group commit, so the read sees this call's earlier statements.
        rows = await self._commits.now(handle, rows_by_key, keys)
        return {key: record_from_row(row) for key, row in rows.items()}

    async def _insert_new(self, handle: aiosqlite.Connection, batch: NewRecords) -> None:
        if batch.built or self.embedder is not None:  # vectors are stored from records
            await self._insert(handle, batch.records())
            return
        # The rows from the inputs; the records while COMMIT syncs the log, when the
        # event loop would otherwise wait on SQLite.
        self._commits.later(insert_now, PendingInsert.of_new(batch))
        self._commits.while_committing(batch.records)

    async def _insert(self, handle: aiosqlite.Connection, records: Sequence[MemoryRecord]) -> None:
        self._commits.later(insert_now, PendingInsert(records))
        made = self._vectors_of(records)
        if made is not None:
            self._commits.later(vectors.store_vectors_now, self._vector_check, records, made)

    async def _update(self, handle: aiosqlite.Connection, id: str, changes: RecordChanges) -> None:
        names = sorted(changes)  # field names from the base class, never user text
        values = [
            format_timestamp(value) if isinstance(value, datetime) else value
            for value in (changes[name] for name in names)
        ]
        assignments = ", ".join(f"{name} = ?" for name in names)
        sql = f"UPDATE memory_records SET {assignments} WHERE id = ?"
        self._commits.later(execute_now, sql, (*values, id))

    async def _delete(self, id: str) -> None:
        """Delete, then scrub the record from the file (S5).

        The FTS5 index drops the words in the transaction (``sqlite.delete``: secure-delete
        or a merge), and the WAL is emptied so its old page images go too — at once,
        or, while another connection reads a snapshot from before the delete, as soon
        as that read ends (retried without blocking; see docs/deletion.md).
        """
        merge = not self._driver.secure_delete
        await self._flush_before_erasing()
        async with self._writing() as conn:
            before = (await self._fetch_records(conn, [id])).get(id)
            deleted = await self._commits.now(conn, delete_now, id, merge)
            if before is not None:
                await self._erase_traces(conn, [id], provenance_of(before))
            await self._journal_delete(conn, id, before)
        if deleted:
            await self._after_forget()

    async def _forget(
        self, handle: aiosqlite.Connection, scope: Mapping[str, str]
    ) -> list[Forgotten]:
        merge = not self._driver.secure_delete
        return await self._commits.now(handle, forget_now, scope, merge)

    async def _after_forget(self) -> None:
        async with self._reading() as conn:
            # A reader of an older snapshot blocks it: then retried until it works.
            if not await self._scrub_wal(conn):
                self._wal.owe()

    async def _search(
        self, query: MemorySearchQuery, terms: Sequence[str], now: datetime
    ) -> list[MemoryHit]:
        if self._embedder is not None and not query.is_listing:
            # The query is embedded while its keyword ranking runs, and the connection's
            # thread takes the vector after that ranking, in the same snapshot: a search
            # costs the longer of the two instead of their sum.
            embedding = self._query_vector(query.query or "")
            try:
                async with self._reading() as conn:
                    fused = await on_thread(
                        conn,
                        hybrid_rows_now,
                        query,
                        self._fusion_query(query),
                        embedding,
                        now,
                        self._statistics,
                        self._scope_splits,
                        self._vector_cache,
                        self._fuse,
                    )
            finally:
                embedding.cancel()  # when the search failed or was cancelled first
            return [scored_hit(record_from_row(row), score) for score, row in fused]
        async with self._reading() as conn:
            if not query.is_listing:
                return await ranked_search(conn, query, now, self._statistics, self._scope_splits)
            rows = await on_thread(conn, listing_rows_now, query, now)
        return listing_hits(rows)

    async def _export(self, scope: Mapping[str, str]) -> AsyncIterator[MemoryRecord]:
        """Pages keyed on ``(created_at, id)``, so each record is yielded once even when
        others are written meanwhile; the connection is free between pages."""
        after: tuple[str, str] | None = None
        while True:
            async with self._reading() as conn:
                rows = await export_page(conn, scope, after, _EXPORT_PAGE)
            for row in rows:
                yield record_from_row(row)
            if len(rows) < _EXPORT_PAGE:
                return
            after = (rows[-1][COLUMN_NAMES.index("created_at")], rows[-1][0])
