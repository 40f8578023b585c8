"""A SQLite connection left open where its worker thread cannot follow: the program's
exit, and a fork.

Each connection runs its statements on a worker thread of aiosqlite's, which is not a
daemon: Python waits for it at exit. A program that never closed its store (it raised
before ``await store.aclose()``, or forgot the call) would then wait forever, since the
thread waits for work and the store, still referenced from the thread's last call, is
never collected. So every connection is tracked until it stops. When Python begins to
exit, a daemon thread waits for the program's other threads to end (they may still use
a store; a thread pool's idle threads end a moment later, when the standard library
stops them), then stops each connection left open as closing it would (the statements
already queued run first, then the file is closed), with a ``ResourceWarning`` that
names the file. (Before aiosqlite 0.22 the worker is the connection itself, with no
way to stop it but a private one: it is made a daemon instead.) Nothing committed is at
risk either way: a commit is on disk before the call that made it returns.

A forked process inherits the connections but not their threads, and SQLite forbids
using a connection across a fork: a call would wait forever for a thread that is not
there. In the child every connection open at the fork is marked
(:func:`opened_before_fork`), so the store can refuse instead, and it is no longer
the child's to stop at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sqlite3
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Final

import aiosqlite

__all__ = ["TrackedConnection", "opened_before_fork"]

_ITERATION_CHUNK: Final = 64
"""Rows a cursor fetches at a time when iterated (aiosqlite's own default)."""

# Connections not yet stopped (aiosqlite 0.22 and later: those stopped at exit), and
# every connection not yet stopped whatever aiosqlite's version (a fork marks them);
# both are changed by the threads that open and close stores, under the lock.
_left_open: weakref.WeakSet[TrackedConnection] = weakref.WeakSet()
_forkable: weakref.WeakSet[TrackedConnection] = weakref.WeakSet()
_registered = False
_lock = threading.Lock()


class TrackedConnection(aiosqlite.Connection):
    """An aiosqlite connection that is stopped at exit if the program left it open, and
    marked in a process forked while it was open."""

    def __init__(self, connector: Callable[[], sqlite3.Connection], location: str) -> None:
        self.worker: threading.Thread | None = None
        """The thread that runs its statements, once it has connected."""

        def connect_in_worker() -> sqlite3.Connection:
            self.worker = threading.current_thread()
            return connector()

        super().__init__(connect_in_worker, _ITERATION_CHUNK)
        self.location = location
        """The database the connection opens, as it was given."""
        self.opened_in = os.getpid()
        """The process that made the connection."""
        self.forked = False
        """True in a process forked while the connection was open."""
        if isinstance(self, threading.Thread):
            # aiosqlite before 0.22 (CrewAI pins 0.21): the connection is its own worker
            # thread and has no stop(); as a daemon it cannot keep the program alive.
            self.daemon = True
            with _lock:
                _forkable.add(self)
            return
        _track(self)

    def stop(self) -> asyncio.Future[object] | None:
        """Stop the worker thread (aiosqlite's ``close()`` ends with this); not left open."""
        with _lock:
            _left_open.discard(self)
            _forkable.discard(self)
        return super().stop()


def opened_before_fork(connection: aiosqlite.Connection) -> int | None:
    """The process that opened ``connection``, when this process is a fork made while
    it was open (no call may use it here); None otherwise."""
    if isinstance(connection, TrackedConnection) and connection.forked:
        return connection.opened_in
    return None


def _after_fork_in_child() -> None:
    global _lock, _left_open, _forkable
    # The child has one thread now; the lock may have been held by another at the fork.
    for connection in list(_forkable):
        connection.forked = True
    # The parent's to close: the child neither waits for them nor stops them.
    _lock, _left_open, _forkable = threading.Lock(), weakref.WeakSet(), weakref.WeakSet()


if hasattr(os, "register_at_fork"):  # not on Windows, which cannot fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _track(connection: TrackedConnection) -> None:
    global _registered
    with _lock:
        _left_open.add(connection)
        _forkable.add(connection)
        if _registered:
            return
        _registered = True
    # threading's own exit hooks run before Python waits for non-daemon threads (the
    # standard library's thread pools stop theirs the same way); atexit's run after.
    register: Callable[[Callable[[], None]], object] = getattr(
        threading, "_register_atexit", atexit.register
    )
    with contextlib.suppress(RuntimeError):  # the interpreter is already shutting down
        register(_when_exiting)


def _when_exiting() -> None:
    closer = threading.Thread(target=_stop_left_open, name="recallstore-left-open", daemon=True)
    try:
        closer.start()
    except RuntimeError:  # no thread can start now: stop them without waiting
        _stop_each()


def _stop_left_open() -> None:
    """The closing thread: wait for the program's other threads, then stop every
    connection still open, with a ``ResourceWarning`` for each."""
    _wait_for_other_threads()
    _stop_each()


def _still_open() -> list[TrackedConnection]:
    with _lock:
        return list(_left_open)


def _stop_each() -> None:
    for connection in _still_open():
        # Warnings turned into errors must not keep the program from exiting.
        with contextlib.suppress(Warning):
            warnings.warn(
                f"the SQLite store at {connection.location!r} was left open; it is closed at "
                "exit (close a store with 'async with' or 'await store.aclose()')",
                ResourceWarning,
                stacklevel=1,
            )
        with warnings.catch_warnings():
            # stop() asks asyncio for a loop, which may warn that none is current.
            warnings.simplefilter("ignore", DeprecationWarning)
            connection.stop()


def _wait_for_other_threads() -> None:
    """Join every non-daemon thread but the main one (which is joining them all) and the
    open connections' workers: a thread still running may be using a store."""
    main = threading.main_thread()
    while True:
        workers = {connection.worker for connection in _still_open()}
        others = [
            thread
            for thread in threading.enumerate()
            if not thread.daemon and thread is not main and thread not in workers
        ]
        if not others:
            return
        for thread in others:
            thread.join()
