"""Group commit for the SQLite backend: concurrent write calls share one transaction.

Every write call on a :class:`~recallstore.backends.sqlite.SqliteMemoryStore` (write,
invalidate, delete, import) runs its statements while holding the store's connection
lock, as before. What changes is the end of the call: when more write calls are
already queued for the lock, the call does not commit. It hands the lock on and waits;
the next call runs inside the same ``BEGIN IMMEDIATE`` transaction, and the last call
of the queue commits once, with one fsync, for all of them. Then every call of the
group returns.

* **Atomic per call.** The first call of a group runs directly in the transaction
  (nothing else is in it yet); every later one runs inside ``SAVEPOINT`` of its own.
  A call that raises (a conflicting supersede, a missing record, a bad id source) is
  rolled back to its savepoint alone and gets its error at once; the calls before it
  stay in the transaction and the calls after it start from their state.
* **Answered after the commit.** A call returns only when the ``COMMIT`` holding its
  write succeeded; when that commit fails, every call of the group gets the error and
  none of their writes is in the file.
* **Readers never see a group's uncommitted writes.** A read call that gets the lock
  while a group is open commits it first (so does closing the store).
* **Bounded.** A group takes at most :data:`MAX_GROUP_CALLS` calls; a caller cancelled
  while queued, whose turn was meant to commit, leaves the commit to a task.

The other connections and processes see nothing new: the group holds the database's
write lock from ``BEGIN IMMEDIATE`` to ``COMMIT`` like a single call did, so S3 (of
two concurrent supersedes of one record exactly one wins) holds across them as before.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Final

import aiosqlite

from recallstore.backends._sqlite_rows import run
from recallstore.errors import StoreUnavailableError

__all__ = ["MAX_GROUP_CALLS", "GroupCommit"]

MAX_GROUP_CALLS: Final = 256
"""Most write calls one transaction holds; the call that fills it commits."""
_SAVEPOINT: Final = "recallstore_call"


class _Group:
    """The write calls inside one open transaction on ``conn``."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn
        self.calls = 0
        self.committed: asyncio.Future[None] = asyncio.get_running_loop().create_future()


class GroupCommit:
    """Write transactions over one connection, shared by the calls queued at once.

    ``lock`` guards the connection (readers take it too, and call :meth:`settle`
    first). ``begin`` runs right after each ``BEGIN IMMEDIATE``, in the transaction.
    ``target`` names the database in errors.
    """

    def __init__(
        self,
        lock: asyncio.Lock,
        begin: Callable[[aiosqlite.Connection], Awaitable[None]],
        target: str,
    ) -> None:
        self._lock = lock
        self._begin = begin
        self._target = target
        self._group: _Group | None = None
        self._queued = 0  # write calls waiting for the lock
        self._tasks: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def call(
        self, connection: Callable[[], aiosqlite.Connection]
    ) -> AsyncIterator[aiosqlite.Connection]:
        """One write call's part of a group transaction; ``connection()`` gives the open
        connection (or raises).

        Everything done through the yielded connection lands with this call or is
        rolled back with it alone: the place for any row that must be atomic with the
        call (a journal entry, say). Returns once the commit holding it succeeded.
        """
        self._queued += 1
        try:
            await self._lock.acquire()
        except BaseException:
            self._queued -= 1
            self._commit_later()
            raise
        self._queued -= 1
        try:
            group = await self._join(connection())
        except BaseException:
            self._lock.release()
            raise
        alone = group.calls == 0
        group.calls += 1
        try:
            if not alone:
                await run(group.conn, f"SAVEPOINT {_SAVEPOINT}")
            yield group.conn
            if not alone:
                await run(group.conn, f"RELEASE {_SAVEPOINT}")
        except BaseException as exc:
            await self._undo_call(group, alone)
            if isinstance(exc, sqlite3.Error):
                raise StoreUnavailableError(self._target, str(exc)) from exc
            raise
        await self._hand_on(group)
        await asyncio.shield(group.committed)

    async def settle(self) -> None:
        """Commit the open group, if any; call with the lock held, before reading.

        A failed commit is reported to the group's own callers, not to this one.
        """
        group = self._group
        if group is not None:
            with suppress(StoreUnavailableError):
                await self._commit(group)

    async def _join(self, conn: aiosqlite.Connection) -> _Group:
        """The open group, or a new one in a fresh ``BEGIN IMMEDIATE`` transaction."""
        if self._group is not None:
            return self._group
        try:
            await run(conn, "BEGIN IMMEDIATE")
            await self._begin(conn)
        except BaseException as exc:
            # A cancelled await does not stop a statement already queued on aiosqlite's
            # thread, so roll back on that thread, behind it (a no-op with no transaction).
            await conn.rollback()
            if isinstance(exc, sqlite3.Error):
                raise StoreUnavailableError(self._target, str(exc)) from exc
            raise
        self._group = _Group(conn)
        return self._group

    async def _undo_call(self, group: _Group, alone: bool) -> None:
        """Roll back one failed call, then commit or hand on the rest of its group."""
        group.calls -= 1
        if alone:
            # Nothing else is in the transaction: drop it whole.
            self._group = None
            try:
                await group.conn.rollback()
            finally:
                group.committed.set_result(None)
                self._lock.release()
            return
        try:
            await run(group.conn, f"ROLLBACK TO {_SAVEPOINT}")
            await run(group.conn, f"RELEASE {_SAVEPOINT}")
            intact = group.conn.in_transaction
        except sqlite3.Error:
            intact = False
        if not intact:
            # SQLite rolled the whole transaction back (I/O error, full disk): the calls
            # already in it are lost too, and told so.
            try:
                await self._fail(group, "the shared write transaction was rolled back")
            finally:
                self._lock.release()
            return
        # If the commit of the others' writes fails, they are told; this call keeps its error.
        with suppress(StoreUnavailableError):
            await self._hand_on(group)

    async def _hand_on(self, group: _Group) -> None:
        """Leave the commit to the next queued write call, or commit now."""
        if self._queued and group.calls < MAX_GROUP_CALLS:
            self._lock.release()
            return
        # Shielded: a caller cancelled here must not leave the group uncommitted.
        await asyncio.shield(self._commit_and_release(group))

    async def _commit_and_release(self, group: _Group) -> None:
        try:
            await self._commit(group)
        finally:
            self._lock.release()

    async def _commit(self, group: _Group) -> None:
        self._group = None
        try:
            await run(group.conn, "COMMIT")
        except sqlite3.Error as exc:
            await self._fail(group, f"commit failed: {exc}")
            raise StoreUnavailableError(self._target, f"commit failed: {exc}") from exc
        group.committed.set_result(None)

    async def _fail(self, group: _Group, reason: str) -> None:
        self._group = None
        try:
            await group.conn.rollback()
        finally:
            group.committed.set_exception(StoreUnavailableError(self._target, reason))
            # Marked as retrieved, so a group nobody waits on any more logs nothing.
            group.committed.exception()

    def _commit_later(self) -> None:
        """A queued call was cancelled: if the open group counted on it, commit in a task."""
        if self._group is None or self._queued:
            return
        task = asyncio.get_running_loop().create_task(self._commit_when_free())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _commit_when_free(self) -> None:
        async with self._lock:
            await self.settle()
