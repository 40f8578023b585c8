"""``BackgroundLoop``: an asyncio event loop on a daemon thread, for blocking callers.

``recallstore.sync`` opens its stores here. Four things about a loop's life are kept
in this module, each tested in tests/agent/test_sync_lifecycle.py:

* **fork()**: a child process inherits the loop but not its thread, so a call there
  would wait forever; it raises :class:`~recallstore.errors.ConfigurationError`
  instead (open the store after forking), and ``close()`` there releases nothing (the
  connections belong to the parent).
* **close() during calls**: a call cancelled because the loop closed raises
  :class:`~recallstore.errors.StoreUnavailableError`, not ``CancelledError``.
* **Never closed**: a loop nobody references any more (a re-run notebook cell) closes
  the stores opened on it and stops its thread when it is garbage-collected.
* **Interrupted**: a blocking call interrupted (``KeyboardInterrupt``) cancels its
  coroutine and waits for it to stop before the interrupt goes on, so a write has
  then landed whole or not at all (docs/langgraph.md#blocking-calls-recallstoresync).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

from recallstore.errors import ConfigurationError, StoreUnavailableError

__all__ = ["BackgroundLoop"]

T = TypeVar("T")

_logger = logging.getLogger("recallstore.sync")


class _Closable(Protocol):
    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class BackgroundLoop:
    """An asyncio event loop running on a daemon thread, for blocking callers.

    :meth:`run` submits a coroutine from any other thread and waits for its result;
    :meth:`arun` awaits it from a coroutine on another loop. :meth:`close` closes the
    stores opened on it, cancels what is still running, stops the loop and joins the
    thread (idempotent); so does garbage collection, without the join, when nothing
    references the loop any more. Made before ``fork()``, it is the parent's only.
    """

    def __init__(self, name: str = "recallstore-sync") -> None:
        self.loop = asyncio.new_event_loop()
        """The loop; every coroutine given to :meth:`run` runs on it."""
        self._closed = False
        self._pid = os.getpid()
        self._lock = threading.Lock()  # a call is queued on the loop or refused, never lost
        # The stores to close with the loop; the finalizer shares the list, not self.
        self._stores: list[_Closable] = []
        # The thread holds the loop, not self, so a loop nobody uses can be collected.
        self._thread = threading.Thread(target=_serve, args=(self.loop,), name=name, daemon=True)
        self._thread.start()
        self._finalizer = weakref.finalize(self, _abandoned, self.loop, self._stores, self._pid)
        self._finalizer.atexit = False  # at exit the daemon thread just stops, as before

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    @property
    def forked(self) -> bool:
        """True in a child process forked after this loop was made: it cannot run there."""
        return os.getpid() != self._pid

    def adopt(self, store: _Closable) -> None:
        """Close ``store`` (``async with`` a store's exit) when the loop closes or is collected,
        unless :meth:`release` took it back first."""
        self._stores.append(store)

    def release(self, store: _Closable) -> None:
        """Forget ``store``: it was closed by its owner."""
        if store in self._stores:
            self._stores.remove(store)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and block until it returns (or raises).

        Interrupted (``KeyboardInterrupt``), the coroutine is cancelled and waited for
        before the interrupt goes on; a call the loop's closing cancelled raises
        :class:`~recallstore.errors.StoreUnavailableError`.
        """
        call = _Call(coro)
        with self._lock:
            self._check_usable(coro)
            self.loop.call_soon_threadsafe(call.start, self.loop)
        try:
            call.finished.wait()
        except BaseException:
            with contextlib.suppress(RuntimeError):  # a loop closed meanwhile ended it
                self.loop.call_soon_threadsafe(call.cancel)
                call.finished.wait()  # the call is over: a write landed whole or not at all
            raise
        result: T = call.outcome(self._closed)
        return result

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop from a coroutine of another loop, without blocking it."""
        if asyncio.get_running_loop() is self.loop:
            return await coro
        with self._lock:
            self._check_usable(coro)
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._closed and future.cancelled() and current and not current.cancelling():
                raise _closed_during_call() from None
            raise

    def _check_usable(self, coro: Coroutine[Any, Any, Any]) -> None:
        problem: Exception | None = None
        if self.forked:
            problem = ConfigurationError(
                f"this recallstore.sync store was opened in process {self._pid}, before "
                f"fork(); process {os.getpid()} has a copy without its event loop's thread "
                "and connections, where every call would wait forever: open the store "
                "after forking, in each process that uses it (e.g. a post-fork hook)"
            )
        elif self._closed:
            problem = StoreUnavailableError("the background event loop", "it was closed")
        elif threading.get_ident() == self._thread.ident:
            problem = ConfigurationError(
                "a blocking recallstore.sync call was made on its own background loop, "
                "where it would wait for itself: await the async API there instead"
            )
        if problem is not None:
            coro.close()
            raise problem

    def close(self) -> None:
        """Close the adopted stores, cancel the loop's remaining tasks, stop it and join
        its thread. In a forked child it only marks the loop closed: the thread and the
        connections are the parent's."""
        if self._closed:
            return
        if self.forked:
            self._closed = True
            self._finalizer.detach()
            return
        if threading.get_ident() == self._thread.ident:
            raise ConfigurationError("a BackgroundLoop cannot be closed from its own thread")
        with self._lock:
            self._closed = True
        self._finalizer.detach()
        asyncio.run_coroutine_threadsafe(_shut_down(self._stores), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _Call:
    """One blocking call: its task on the loop and an event set when that is done."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro = coro
        self._task: asyncio.Task[Any] | None = None
        self.finished = threading.Event()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._task = loop.create_task(self._coro)
        self._task.add_done_callback(lambda _: self.finished.set())

    def cancel(self) -> None:
        # Queued after start() on the same loop, so the task exists.
        if self._task is not None:
            self._task.cancel()

    def outcome(self, closed: bool) -> Any:  # the coroutine's T
        assert self._task is not None
        if self._task.cancelled() and closed:
            raise _closed_during_call()
        return self._task.result()


def _closed_during_call() -> StoreUnavailableError:
    return StoreUnavailableError(
        "the background event loop",
        "it was closed while this call was running (a write lands whole or not at all)",
    )


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


async def _shut_down(stores: list[_Closable], *, stop: bool = False) -> None:
    """Close ``stores``, then cancel every other task (and stop the loop with ``stop``)."""
    for store in list(stores):
        try:
            await store.__aexit__(None, None, None)
        except Exception:  # the others must still be closed
            _logger.warning("closing a store on the background loop failed", exc_info=True)
    stores.clear()
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if stop:
        asyncio.get_running_loop().stop()


def _abandoned(loop: asyncio.AbstractEventLoop, stores: list[_Closable], pid: int) -> None:
    """A loop nobody references: shut it down from its own thread, never waiting here
    (the collector may run on any thread, the loop's own included)."""
    if os.getpid() != pid or loop.is_closed():
        return  # a forked child's copy, or a thread that already ended
    with contextlib.suppress(RuntimeError):  # closed meanwhile
        loop.call_soon_threadsafe(lambda: loop.create_task(_shut_down(stores, stop=True)))
