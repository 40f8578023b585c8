"""The connection of a ``SqliteMemoryStore``: opening, configuring, holding and closing it.

One connection per store, behind one lock: :meth:`SqliteConnection.open` creates and
migrates the file (WAL, ``synchronous``, ``secure_delete``, the journal bound, the
embedder's name), ``_reading`` holds it for one read, ``_writing`` for one write's part
of a group commit (``sqlite.commit``), and a WAL scrub owed after a delete
(``sqlite.wal``) is tried whenever the connection is taken and once more at close.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import aiosqlite

from recallstore.backends._fork import forked_refusal
from recallstore.backends.journal import JournalSettings
from recallstore.backends.sqlite import journal as journal_table
from recallstore.backends.sqlite import schema as schema
from recallstore.backends.sqlite import vectors as vectors
from recallstore.backends.sqlite.commit import GroupCommit
from recallstore.backends.sqlite.delete import check_index_format, use_secure_delete
from recallstore.backends.sqlite.driver import SqliteDriver
from recallstore.backends.sqlite.left_open import opened_before_fork
from recallstore.backends.sqlite.loop_lock import LoopLock
from recallstore.backends.sqlite.read_only import READ_ONLY_REASON, open_reader
from recallstore.backends.sqlite.rows import fetchone_now, on_thread, run
from recallstore.backends.sqlite.sidecars import no_sidecars_left_on_refusal, refuse_unwritable
from recallstore.backends.sqlite.wal import (
    ATTEMPT_WAIT_MS,
    AUTOCHECKPOINT_PAGES,
    WalScrub,
    enable_wal,
    truncate_wal,
)
from recallstore.embedding import Embedder
from recallstore.errors import StoreIncompatibleError, StoreUnavailableError
from recallstore.store import MonotonicClock

__all__ = ["BUSY_TIMEOUT_SECONDS", "SqliteConnection"]

BUSY_TIMEOUT_SECONDS: Final = 10.0
"""How long a call waits for another connection's write lock before failing."""
_BUSY_TIMEOUT_MS: Final = int(BUSY_TIMEOUT_SECONDS * 1000)


class SqliteConnection:
    """The connection part of ``SqliteMemoryStore`` (whose constructor sets these)."""

    path: Path
    _driver: SqliteDriver
    _read_only: bool
    _tokenizer: str
    _synchronous: str
    _conn: aiosqlite.Connection | None
    _watch: aiosqlite.Connection | None
    _vector_cache: vectors.VectorCache
    _lock: LoopLock
    _commits: GroupCommit
    _wal: WalScrub
    _clock: MonotonicClock
    _embedder: Embedder | None
    _journal: JournalSettings | None
    _store_id: str | None

    if TYPE_CHECKING:  # provided by BaseMemoryStore

        def _check_open(self) -> None: ...

        async def _start_journal(self) -> None: ...

        async def _stop_journal(self) -> None: ...

    async def open(self) -> None:
        """Open (creating and migrating if needed) the database; a no-op when open.

        Raises :class:`StoreUnavailableError` with the reason when the file cannot be
        used, and :class:`StoreIncompatibleError` when its schema is newer than ours.
        """
        if self._conn is not None:
            self._check_open()  # refuses a connection opened before this process forked
            return
        async with self._lock:
            if self._conn is not None:
                return
            self._vector_cache.new_connection()
            if self._read_only:
                self._conn = await open_reader(
                    self.path, self._driver, self._embedder, BUSY_TIMEOUT_SECONDS
                )
                self._store_id = await schema.read_store_id(self._conn)
                return
            target = str(self.path)
            probe_uri = schema.check_location(self.path)
            refuse_unwritable(self.path)
            if probe_uri is not None:
                async with no_sidecars_left_on_refusal(self.path, self._driver):
                    index_format = await schema.probe_version(target, probe_uri, self._driver)
                    check_index_format(target, index_format, self._driver)
            error = self._driver.error
            try:
                conn = await self._driver.connect(
                    self.path, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS
                )
            except error as exc:
                raise StoreUnavailableError(target, f"cannot open: {exc}") from exc
            try:
                await self._configure(conn)
                await self._observe_newest(conn)
            except BaseException as exc:
                await conn.close()
                if isinstance(exc, error):
                    raise StoreUnavailableError(target, f"cannot open: {exc}") from exc
                raise
            self._conn = conn
            self._store_id = await schema.read_store_id(conn)
        await self._start_journal()

    async def _configure(self, conn: aiosqlite.Connection) -> None:
        # Read the version before anything that writes: even journal_mode=WAL writes
        # the header, and a newer file must stay unchanged.
        target = str(self.path)
        found = await schema.read_user_version(conn)
        if found > schema.SCHEMA_VERSION:
            raise StoreIncompatibleError(target, found, schema.SCHEMA_VERSION)
        await run(conn, f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        mode = await enable_wal(conn, BUSY_TIMEOUT_SECONDS, self._driver.operational_error)
        if mode is None or str(mode[0]).lower() != "wal":
            raise StoreUnavailableError(target, f"cannot enable WAL (journal_mode={mode})")
        await run(conn, f"PRAGMA synchronous = {self._synchronous}")
        await run(conn, f"PRAGMA wal_autocheckpoint = {AUTOCHECKPOINT_PAGES}")
        await run(conn, "PRAGMA foreign_keys = ON")
        await run(conn, "PRAGMA secure_delete = ON")
        await schema.migrate(conn, target, self._tokenizer)
        if self._driver.secure_delete:
            await on_thread(conn, use_secure_delete)
        if self._journal is not None:
            await journal_table.install_bound(conn, self._journal.max_events)
        if self._embedder is not None:
            await vectors.record_embedder(conn, target, self._embedder)

    async def _observe_newest(self, conn: aiosqlite.Connection) -> None:
        """Keep our clock ahead of every record in the file (other connections write too)."""
        await on_thread(conn, self._observe_newest_now)

    def _observe_newest_now(self, db: Any) -> None:
        """:meth:`_observe_newest` on the connection's thread."""
        newest = fetchone_now(db, "SELECT max(created_at) FROM memory_records")
        if newest is not None and newest[0] is not None:
            self._clock.observe(datetime.fromisoformat(newest[0]))

    async def aclose(self) -> None:
        """Close the connection; later calls raise :class:`StoreUnavailableError`.

        A WAL scrub still owed after a delete is tried once more first. In a process
        forked while the store was open, nothing is done: the connection is the
        parent's, and this process can neither use it nor close it.
        """
        if self._fork_refusal() is not None:
            return
        await self._stop_journal()
        await self._wal.stop()
        async with self._lock:
            watch, self._watch = self._watch, None
            if watch is not None:
                await watch.close()
            await self._commits.settle()
            conn, self._conn = self._conn, None
            if conn is not None:
                if self._wal.pending:
                    self._wal.settle(await self._scrub_wal(conn))
                await conn.close()

    async def _scrub_wal_when_free(self, wait_ms: int = ATTEMPT_WAIT_MS) -> bool | None:
        """One WAL scrub with the connection held; None when the store is closed."""
        async with self._lock:
            if self._conn is None:
                return None
            await self._commits.settle()
            return await self._scrub_wal(self._conn, wait_ms=wait_ms)

    @property
    def _is_open(self) -> bool:
        return self._conn is not None

    def _fork_refusal(self) -> str | None:
        """Why this process may not use the open store: it is a fork made while the
        store was open (:func:`~.left_open.opened_before_fork`); None when it may."""
        conn = self._conn
        parent = None if conn is None else opened_before_fork(conn)
        if parent is None:
            return None
        return forked_refusal(
            parent,
            "its connection without the thread that runs it (SQLite forbids using "
            "a connection across a fork)",
        )

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[aiosqlite.Connection]:
        """The open connection, held exclusively for one call, with errors translated.

        Writes of a commit group still open are committed first: a reader never sees
        what is not yet in the file.
        """
        async with self._lock:
            conn = self._connection()
            await self._commits.settle()
            if self._wal.pending:
                # Without waiting: a long reader must not slow every call down.
                self._wal.settle(await self._scrub_wal(conn, wait_ms=0))
            try:
                yield conn
            except self._driver.error as exc:
                raise StoreUnavailableError(str(self.path), str(exc)) from exc

    def _writing(self) -> AbstractAsyncContextManager[aiosqlite.Connection]:
        """This call's part of a ``BEGIN IMMEDIATE`` transaction that the write calls
        queued at the same time share (group commit, see ``sqlite.commit``): it lands
        or is rolled back alone, and returns once the transaction is committed. A WAL
        scrub still owed is tried first (``WalScrub.scrubbed_then``).

        Inside it, run every statement through ``self._commits.later`` (kept with the
        call, run at the commit) or ``self._commits.now`` (a result needed), never
        ``conn.execute`` on the handle: only those two run in the call's savepoint (a
        journal entry, atomic with the call, goes through ``later`` like the inserts).
        """
        if self._read_only:
            raise StoreUnavailableError(str(self.path), READ_ONLY_REASON)
        writing = self._commits.call(self._connection)
        return self._wal.scrubbed_then(writing) if self._wal.pending else writing

    def _connection(self) -> aiosqlite.Connection:
        """The open connection; :class:`StoreUnavailableError` when closed."""
        self._check_open()
        assert self._conn is not None  # what _check_open just checked
        return self._conn

    async def _scrub_wal(
        self, conn: aiosqlite.Connection, *, wait_ms: int = ATTEMPT_WAIT_MS
    ) -> bool:
        """Empty the WAL (see ``sqlite.wal``); False when a reader or writer is in the way."""
        try:
            return await truncate_wal(conn, _BUSY_TIMEOUT_MS, wait_ms=wait_ms)
        except self._driver.error:
            return False
