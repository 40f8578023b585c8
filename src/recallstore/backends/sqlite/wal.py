"""Scrubbing deleted content out of a SQLite write-ahead log.

After a delete the old page images (the forgotten text among them) are still frames
of the ``-wal`` file until a ``TRUNCATE`` checkpoint copies the log into the database
and empties it. That checkpoint cannot finish while another connection reads an
older snapshot, and waiting for that reader inside ``delete`` would stall it for the
whole busy timeout. So one attempt waits only briefly; when a reader is in the way
the store remembers the debt and retries — in the background, and at every later
call on the store (a read or a write) and at its close — until a checkpoint succeeds.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final, TypeVar

import aiosqlite

from recallstore.backends.sqlite.rows import fetchone

__all__ = [
    "ATTEMPT_WAIT_MS",
    "AUTOCHECKPOINT_PAGES",
    "RETRY_FOR_SECONDS",
    "RETRY_MAX_INTERVAL",
    "WalScrub",
    "enable_wal",
    "truncate_wal",
]

ATTEMPT_WAIT_MS: Final = 50
"""How long the delete's own attempt, a background retry or the close waits for readers
of older snapshots to finish; the retry at the start of a later call does not wait."""
AUTOCHECKPOINT_PAGES: Final = 4000
"""``PRAGMA wal_autocheckpoint``: the log is copied into the database once it holds this
many pages (16 MB at 4 KiB), not SQLite's 1,000. A batch write at 100k records dirties
hundreds of pages of the scope index, mostly the same ones batch after batch; at
1,000 almost every commit also checkpointed (copying each page again and syncing the
database file), at 4,000 a page rewritten by several commits is copied once. Deletes
still empty the log at once (:func:`truncate_wal`); durability is the WAL's either way."""
RETRY_MAX_INTERVAL: Final = 1.0
"""Background retries start 50 ms apart and back off to this interval (seconds)."""
RETRY_FOR_SECONDS: Final = 60.0
"""How long background retries go on; after that only the store's next call or close retries."""


async def truncate_wal(
    conn: aiosqlite.Connection, busy_timeout_ms: int, *, wait_ms: int = ATTEMPT_WAIT_MS
) -> bool:
    """Checkpoint and empty the WAL, waiting at most ``wait_ms``; True when it is empty.

    ``busy_timeout_ms`` is the connection's normal busy timeout, restored afterwards.
    """
    async with conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}"):
        pass
    try:
        async with conn.execute("PRAGMA wal_checkpoint(TRUNCATE)") as cursor:
            row = await cursor.fetchone()
    finally:
        async with conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}"):
            pass
    # (busy, frames in the log, frames checkpointed): busy = 0 means done and truncated.
    return row is not None and int(row[0]) == 0


_Handle = TypeVar("_Handle")


class WalScrub:
    """Whether deleted content may still be in the WAL, and the background retries.

    ``attempt(wait_ms)`` runs one :func:`truncate_wal` with the store's connection held
    (it takes the store's lock) and returns its result, or None when the store is closed.
    """

    def __init__(self, attempt: Callable[[int], Awaitable[bool | None]]) -> None:
        self.pending = False
        self._attempt = attempt
        self._task: asyncio.Task[None] | None = None

    def owe(self) -> None:
        """Record that a checkpoint failed; retry in the background until it succeeds."""
        self.pending = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._retry())

    def settle(self, emptied: bool) -> None:
        """Note the outcome of an attempt made by the store itself."""
        if emptied:
            self.pending = False

    async def _retry(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RETRY_FOR_SECONDS
        delay = ATTEMPT_WAIT_MS / 1000
        while self.pending and loop.time() < deadline:
            await asyncio.sleep(delay)
            if not self.pending:
                return
            emptied = await self._attempt(ATTEMPT_WAIT_MS)
            if emptied is None:  # the store was closed
                return
            self.settle(emptied)
            delay = min(delay * 2, RETRY_MAX_INTERVAL)

    @asynccontextmanager
    async def scrubbed_then(
        self, writing: AbstractAsyncContextManager[_Handle]
    ) -> AsyncIterator[_Handle]:
        """``writing`` (a write call's transaction) after one attempt without waiting:
        deleted text still owed a scrub leaves the log at the start of a later write,
        not only of a later read, also once the background retries gave up
        (:data:`RETRY_FOR_SECONDS`)."""
        emptied = await self._attempt(0)
        if emptied is not None:
            self.settle(emptied)
        async with writing as handle:
            yield handle

    async def stop(self) -> None:
        """Cancel the background retries (the store is closing)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})


async def enable_wal(
    conn: aiosqlite.Connection, busy_seconds: float, operational_error: type[Exception]
) -> sqlite3.Row | tuple[Any, ...] | None:
    """Switch a file to WAL, waiting out other connections that are doing the same.

    Converting a new file needs an exclusive lock, and SQLite answers "database is
    locked" at once, without the busy handler, while another connection converts or
    migrates it; so retry with a short back-off for up to ``busy_seconds``.
    ``operational_error`` is the driver's ``OperationalError`` (see ``sqlite.driver``).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + busy_seconds
    delay = 0.005
    while True:
        try:
            return await fetchone(conn, "PRAGMA journal_mode = WAL")
        except operational_error as exc:
            if "locked" not in str(exc) or loop.time() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)
