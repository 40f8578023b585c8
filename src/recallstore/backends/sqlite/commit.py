"""Group commit for the SQLite backend: concurrent write calls share one transaction.

Every write call on a :class:`~recallstore.backends.sqlite.SqliteMemoryStore` (write,
invalidate, delete, import) holds the store's connection lock while it runs, as
before. What changes is how it ends: when more write calls are already queued for the
lock, a call does not commit. It hands the lock on and waits; the next call runs in
the same ``BEGIN IMMEDIATE`` transaction, and the last call of the queue commits once,
with one fsync, for all of them. Then every call of the group returns.

* **Atomic per call.** Every call after the first of a group runs inside a
  ``SAVEPOINT`` of its own (calls whose statements were kept share one, and are run
  again each in its own only when one of them fails). A call that fails (a
  conflicting supersede, a missing record, a row SQLite refuses) is rolled back to its
  savepoint alone and gets its own error; the calls before it stay in the transaction
  and the calls after it start from their state. The first call needs no savepoint
  (which would make SQLite copy every page it changes): nothing precedes it in the
  transaction, so it is undone by rolling the transaction back and beginning anew.
* **Answered after the commit.** A call returns only once the ``COMMIT`` holding its
  write succeeded; when that commit fails, every call of the group gets the error and
  none of their writes is in the file.
* **Few hand-offs.** Statements whose result nobody reads (inserts, updates) are kept
  with their call and run when something must see them: a later call's read, or the
  commit, which runs every kept call's statements, each in its savepoint, then
  ``COMMIT``, in one hand-off to aiosqlite's thread. 64 single-record writers cost
  two hand-offs per group instead of several per call.
* **Work while the log syncs.** ``COMMIT`` releases the GIL while SQLite writes and
  syncs the log; a call's :meth:`GroupCommit.while_committing` functions run on the
  event loop meanwhile (a batch write builds the records it returns then).
* **Readers never see a group's uncommitted writes.** A read call that gets the lock
  while a group is open commits it first (so does closing the store).
* **Bounded.** A group takes at most :data:`MAX_GROUP_CALLS` calls; a caller cancelled
  while queued, whose turn was meant to commit, leaves the commit to a task.

Other connections and processes see nothing new: a group holds the database's write
lock from ``BEGIN IMMEDIATE`` to ``COMMIT`` as a single call did, so S3 (of two
concurrent supersedes of one record exactly one wins) holds across them as before.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any, Final, TypeVar

import aiosqlite

from recallstore.backends.sqlite.commit_thread import (
    Call,
    Statement,
    TransactionLost,
    roll_back_call,
    run_calls,
    run_calls_and_commit,
)
from recallstore.backends.sqlite.loop_lock import LoopLock
from recallstore.backends.sqlite.rows import on_thread
from recallstore.errors import StoreUnavailableError

__all__ = ["MAX_GROUP_CALLS", "GroupCommit"]

_T = TypeVar("_T")

MAX_GROUP_CALLS: Final = 256
"""Most write calls one transaction holds; the call that fills it commits."""


class _Group:
    """The write calls inside one open transaction on ``conn``."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn
        self.calls = 0
        self.waiting: list[Call] = []  # finished calls whose kept statements have not run
        self.finished: list[Call] = []  # finished calls with work for while_committing
        self.committed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def before_commit(self) -> Callable[[], object] | None:
        """What the connection's thread calls just before COMMIT: it schedules, on the
        event loop, the ``while_committing`` work of the calls whose statements landed
        (a call that failed on the thread has its ``error`` set by then)."""
        if not self.finished:
            return None
        finished, self.finished = self.finished, []

        def run_finished() -> None:
            for call in finished:
                if call.error is None:
                    for function in call.while_committing:
                        function()

        return partial(asyncio.get_running_loop().call_soon_threadsafe, run_finished)


class GroupCommit:
    """Write transactions over one connection, shared by the calls queued at once.

    ``lock`` guards the connection (readers take it too, and call :meth:`settle`
    first). ``begin`` runs right after each ``BEGIN IMMEDIATE``, in the transaction, on
    the connection's thread. ``target`` names the database in errors. ``error`` is the
    driver's base database error (``sqlite.driver``), reported as StoreUnavailableError.
    """

    def __init__(
        self,
        lock: LoopLock,
        begin: Callable[[sqlite3.Connection], None],
        target: str,
        error: type[Exception] = sqlite3.Error,
    ) -> None:
        self._lock = lock
        self._begin = begin
        self._target = target
        self._error = error
        self._group: _Group | None = None
        self._call: Call | None = None  # the call holding the lock
        self._queued = 0  # write calls waiting for the lock
        self._tasks: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def call(
        self, connection: Callable[[], aiosqlite.Connection]
    ) -> AsyncIterator[aiosqlite.Connection]:
        """One write call's part of a group transaction; ``connection()`` gives the open
        connection (or raises).

        Run every statement of the call through :meth:`later` or :meth:`now`: then it
        lands with this call or is rolled back with it alone (the place for any row
        that must be atomic with the call, a journal entry say). Returns once the
        commit holding the call succeeded; raises the call's own error otherwise.
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
        call = self._call = Call(first=alone)
        try:
            yield group.conn
            if call.savepoint_open:
                # It read after keeping statements: finish it now, savepoint and all.
                await self._run(group, [call], None, None)
                if call.error is not None:
                    raise call.error
        except BaseException as exc:
            self._call = None
            await self._undo_call(group, call, alone)
            if isinstance(exc, self._error):
                raise StoreUnavailableError(self._target, str(exc)) from exc
            raise
        self._call = None
        if call.kept:
            group.waiting.append(call)
        if call.while_committing:  # only a call that finished: a failed one never runs it
            group.finished.append(call)
        await self._hand_on(group)
        await asyncio.shield(group.committed)
        if call.error is not None:
            error = call.error
            if isinstance(error, self._error):
                raise StoreUnavailableError(self._target, str(error)) from error
            raise error

    def later(self, function: Callable[..., object], *args: Any) -> None:
        """Keep ``function(db, *args)`` for when the current call's writes must be seen."""
        assert self._call is not None, "later() outside a write call"
        self._call.kept.append((function, args))

    def while_committing(self, function: Callable[[], object]) -> None:
        """Run ``function()`` on the event loop while the commit holding the current call
        waits on the disk (after every statement ran, before COMMIT returns).

        For work the call needs only once its writes are durable (the records a batch
        write returns): done while SQLite syncs the log, with the GIL released, instead
        of before. It may also run after the commit, or not at all if the call failed;
        ``function`` must not raise.
        """
        assert self._call is not None, "while_committing() outside a write call"
        self._call.while_committing.append(function)

    async def now(self, conn: aiosqlite.Connection, function: Callable[..., _T], *args: Any) -> _T:
        """``function(db, *args)`` on the connection's thread, after every kept statement.

        Inside a write call it runs in the call's savepoint; outside one (a reader) it
        runs as it is.
        """
        group, call = self._group, self._call
        if group is None or call is None:
            return await on_thread(conn, function, *args)
        waiting, group.waiting = group.waiting, []
        result: _T = await self._run(group, waiting, call, (function, args))
        if call.error is not None:
            raise call.error
        return result

    async def settle(self) -> None:
        """Commit the open group, if any; call with the lock held, before reading.

        A failed commit is reported to the group's own calls, not to this one.
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
            await on_thread(conn, self._begin_now)
        except BaseException as exc:
            # A cancelled await does not stop a statement already queued on aiosqlite's
            # thread, so roll back on that thread, behind it (a no-op with no transaction).
            await conn.rollback()
            if isinstance(exc, self._error):
                raise StoreUnavailableError(self._target, str(exc)) from exc
            raise
        self._group = _Group(conn)
        return self._group

    def _begin_now(self, db: sqlite3.Connection) -> None:
        db.execute("BEGIN IMMEDIATE").close()
        self._begin(db)

    async def _run(
        self,
        group: _Group,
        waiting: list[Call],
        current: Call | None,
        statement: Statement | None,
    ) -> Any:
        """In one hand-off: the waiting calls' kept statements, each in its savepoint;
        then the current call's, in its savepoint (left open), and ``statement``."""
        try:
            return await on_thread(
                group.conn, run_calls, waiting, current, statement, self._begin_now
            )
        except TransactionLost:
            await self._fail(group, "the shared write transaction was rolled back")
            raise StoreUnavailableError(
                self._target, "the shared write transaction was rolled back"
            ) from None

    async def _undo_call(self, group: _Group, call: Call, alone: bool) -> None:
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
            if call.savepoint_open:
                await on_thread(group.conn, roll_back_call)
            intact = group.conn.in_transaction
        except self._error:
            intact = False
        if not intact:
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
        """Run the waiting calls' statements, then COMMIT, in one hand-off."""
        self._group = None
        waiting, group.waiting = group.waiting, []
        meanwhile = group.before_commit()
        try:
            await on_thread(group.conn, run_calls_and_commit, waiting, self._begin_now, meanwhile)
        except (self._error, TransactionLost) as exc:
            await self._fail(group, f"commit failed: {exc}")
            raise StoreUnavailableError(self._target, f"commit failed: {exc}") from exc
        group.committed.set_result(None)

    async def _fail(self, group: _Group, reason: str) -> None:
        self._group = None
        try:
            await group.conn.rollback()
        finally:
            if not group.committed.done():
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
