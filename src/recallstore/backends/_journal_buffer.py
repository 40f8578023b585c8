"""The in-memory side of a store's journal: buffered search and recall events and the
background task that flushes them and prunes rows past their age.

Search and recall events never wait for a disk sync: they are queued here and
written every ``flush_seconds`` in a transaction of their own (see
``recallstore.backends.journal``). The queue is bounded; if the database stays
unwritable, the oldest buffered events are dropped and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

__all__ = ["JournalBuffer"]

MAX_BUFFERED: Final = 10_000
"""Buffered events kept while flushes fail; beyond it the oldest are dropped."""
_PRUNE_EVERY: Final = 20
"""Flush ticks between two age prunes."""

_logger = logging.getLogger("recallstore.journal")

Flush = Callable[[list[dict[str, Any]]], Awaitable[None]]
Prune = Callable[[], Awaitable[None]]


class JournalBuffer:
    """Buffered envelopes and the task that writes them every ``interval`` seconds."""

    def __init__(self, interval: float, flush: Flush, prune: Prune) -> None:
        self._interval = interval
        self._flush = flush
        self._prune = prune
        self._pending: list[dict[str, Any]] = []
        self._task: asyncio.Task[None] | None = None
        self._stopping: asyncio.Event | None = None
        self.dropped = 0
        """Buffered events dropped because flushes kept failing."""

    def add(self, envelope: dict[str, Any]) -> None:
        """Queue one event for the next flush (in a coroutine: a flusher whose event loop
        ended, the store now used under another, is started again in this one)."""
        self._pending.append(envelope)
        if len(self._pending) > MAX_BUFFERED:
            del self._pending[0]
            self.dropped += 1
        if self._task is not None and self._task.done():
            self._task = None
            self.start()

    def scrub(self, scrubbed: Callable[[dict[str, Any]], Any]) -> None:
        """Apply ``scrubbed`` to every queued event: None drops it, a dict replaces it,
        anything else keeps it (a ``forget`` erasing events not yet written)."""
        kept: list[dict[str, Any]] = []
        for envelope in self._pending:
            outcome = scrubbed(envelope)
            if outcome is None:
                continue
            kept.append(outcome if isinstance(outcome, dict) else envelope)
        self._pending = kept

    async def flush(self) -> None:
        """Write what is queued now; on failure it stays queued and the error propagates."""
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        try:
            await self._flush(rows)
        except BaseException:
            self._pending[:0] = rows
            del self._pending[: max(0, len(self._pending) - MAX_BUFFERED)]
            raise

    def start(self) -> None:
        """Start the background flusher (once)."""
        if self._task is None:
            self._stopping = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(self._stopping))

    async def stop(self) -> None:
        """Stop the flusher and make one last flush (its failure is logged).

        The flusher is asked to stop, not cancelled: a flush in progress finishes its
        transaction first (cancelling one half-way could leave a connection mid-query).
        """
        task, self._task = self._task, None
        if task is not None and self._stopping is not None:
            self._stopping.set()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        try:
            await self.flush()
        except Exception:
            _logger.warning("could not write %d buffered journal events", len(self._pending))

    async def _run(self, stopping: asyncio.Event) -> None:
        ticks = 0
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self._interval)
            if stopping.is_set():
                return
            ticks += 1
            try:
                await self.flush()
                if ticks % _PRUNE_EVERY == 1:
                    await self._prune()
            except Exception:
                # The store may be briefly locked by another process; try next tick.
                _logger.debug("journal flush failed; retrying", exc_info=True)
