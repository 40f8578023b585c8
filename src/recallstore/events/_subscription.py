"""One subscriber's side of the ``EventBus``: a bounded queue read with ``async for``."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from recallstore.events.models import MemoryEvent, StreamGap
from recallstore.store import scope_matches

__all__ = ["Subscription", "SubscriptionStats"]


@dataclass(frozen=True, slots=True)
class SubscriptionStats:
    """Counters of one subscription."""

    received: int
    """Events queued for it (after its scope filter), replayed ones included."""
    delivered: int
    """Events its consumer has read."""
    dropped: int
    """Events dropped because its queue was full."""
    queued: int
    """Events waiting to be read."""
    scope: dict[str, str]
    """Its scope filter."""


class Subscription:
    """An async iterator of :class:`MemoryEvent` and :class:`StreamGap`, from one bus.

    Iterate it with ``async for``; it ends when closed (by :meth:`close`, by leaving
    ``async with``, or when the bus closes). The event loop that first reads it is the
    one it wakes; publishers may run on any thread.
    """

    def __init__(
        self,
        on_close: Callable[[Subscription], None],
        scope: dict[str, str],
        max_queue: int,
        replayed: list[MemoryEvent],
        gap: StreamGap | None = None,
    ) -> None:
        # The bus's way to forget us: passed in, so this module needs nothing from the bus.
        self._on_close = on_close
        self.scope = scope
        self.max_queue = max_queue
        self._queue: deque[MemoryEvent] = deque(replayed)
        self._gap = gap
        self._lock = threading.Lock()
        self._wakeup = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._received = len(replayed)
        self._delivered = 0
        self._dropped = 0
        self._unreported_drops = 0
        self._last_delivered_id: int | None = None

    @property
    def closed(self) -> bool:
        """True once the subscription will yield nothing more."""
        return self._closed

    def stats(self) -> SubscriptionStats:
        """This subscription's counters."""
        with self._lock:
            return SubscriptionStats(
                self._received, self._delivered, self._dropped, len(self._queue), dict(self.scope)
            )

    def matches(self, event: MemoryEvent) -> bool:
        """True when ``event`` is within this subscription's scope filter."""
        return scope_matches(event.scope, self.scope)

    def _offer(self, event: MemoryEvent) -> tuple[int, asyncio.AbstractEventLoop | None]:
        """Queue ``event`` (the bus holds its lock); return the drop count and the loop
        to wake once the bus lock is released."""
        with self._lock:
            if self._closed:
                return 0, None
            dropped = 0
            while len(self._queue) >= self.max_queue:
                self._queue.popleft()
                dropped += 1
            self._queue.append(event)
            self._received += 1
            self._dropped += dropped
            self._unreported_drops += dropped
            return dropped, self._loop

    def _wake(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wakeup.set()
            return
        try:
            loop.call_soon_threadsafe(self._wakeup.set)
        except RuntimeError:
            # The consumer's loop is closed: nobody will read this subscription again.
            self.close()

    def _next_item(self) -> MemoryEvent | StreamGap | None:
        """The next item to hand out, or None when the queue is empty (lock held)."""
        if self._gap is not None:
            gap, self._gap = self._gap, None
            return gap
        if self._unreported_drops:
            missed, self._unreported_drops = self._unreported_drops, 0
            return StreamGap(
                reason="overflow",
                after_id=self._last_delivered_id,
                first_available_id=self._queue[0].id if self._queue else None,
                missed=missed,
            )
        if not self._queue:
            return None
        event = self._queue.popleft()
        self._delivered += 1
        self._last_delivered_id = event.id
        return event

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> MemoryEvent | StreamGap:
        while True:
            with self._lock:
                item = self._next_item()
                if item is not None:
                    return item
                if self._closed:
                    raise StopAsyncIteration
                self._loop = asyncio.get_running_loop()
                self._wakeup.clear()
            await self._wakeup.wait()

    @property
    def pending_gap(self) -> StreamGap | None:
        """The gap notice this subscription starts with (before anything is read), if any."""
        with self._lock:
            return self._gap

    def backfill(self, events: list[MemoryEvent], gap: StreamGap | None) -> None:
        """Replace the starting gap with older ``events`` (from a journal) and what is
        still lost (``gap``). Call before the first read; events outside the scope
        filter are skipped."""
        with self._lock:
            older = [event for event in events if self.matches(event)]
            room = max(0, self.max_queue - len(self._queue))
            lost = max(0, len(older) - room)
            if lost:
                older = older[lost:]
                gap = StreamGap(
                    reason=gap.reason if gap else "overflow",
                    after_id=gap.after_id if gap else None,
                    first_available_id=older[0].id if older else None,
                    missed=(gap.missed if gap else 0) + lost,
                )
            self._gap = gap
            self._queue.extendleft(reversed(older))
            self._received += len(older)

    def get_nowait(self) -> MemoryEvent | StreamGap | None:
        """The next queued item without waiting, or None when there is none."""
        with self._lock:
            return self._next_item()

    def close(self) -> None:
        """Stop receiving; a consumer waiting in ``async for`` finishes. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.clear()
            loop = self._loop
        self._on_close(self)
        if loop is not None and not loop.is_closed():
            self._wake(loop)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
