"""``EventBus``: numbers memory events and fans them out without ever blocking a store call.

* ``publish()`` is synchronous, never awaits and never raises because of a consumer.
  It may be called from any thread.
* ``subscribe()`` returns an async-iterable :class:`Subscription` with its own bounded
  queue. A consumer that falls behind loses its *oldest* queued events (counted), and
  the next thing it reads is a :class:`StreamGap` saying how many it missed.
* ``add_listener()`` registers a plain function called inline by ``publish``; its
  exceptions are caught and counted. Listeners must be quick (like logging handlers);
  anything slow belongs in a subscription.
* A bounded replay buffer lets a subscriber resume after ``last_event_id``; when that id
  is older than the buffer, the subscription starts with an ``expired`` gap notice.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from recallstore.events._subscription import Subscription, SubscriptionStats
from recallstore.events.models import MemoryEvent, StreamGap
from recallstore.store import scope_matches

__all__ = [
    "DEFAULT_MAX_QUEUE",
    "DEFAULT_REPLAY_SIZE",
    "BusStats",
    "EventBus",
    "EventListener",
    "Subscription",
    "SubscriptionStats",
]

DEFAULT_REPLAY_SIZE: Final = 1_000
"""Events the bus keeps for ``last_event_id`` resumption."""
DEFAULT_MAX_QUEUE: Final = 1_000
"""Events a subscription holds before it starts dropping its oldest."""

EventListener = Callable[[MemoryEvent], None]
"""A synchronous callback, called inline by ``publish`` with each matching event."""

_logger = logging.getLogger("recallstore.events")


@dataclass(frozen=True, slots=True)
class BusStats:
    """Counters of one bus since it was created."""

    published: int
    """Events published (the last id handed out)."""
    dropped: int
    """Events dropped by slow subscriptions, over every subscription ever opened."""
    listener_failures: int
    """Exceptions raised by listeners (each caught, logged and counted)."""
    subscriptions: int
    """Subscriptions currently open."""
    listeners: int
    """Listeners currently registered."""
    replay_oldest_id: int | None
    """The oldest event id a subscriber can still resume after, or None when empty."""


class _Listener:
    __slots__ = ("callback", "failures", "scope")

    def __init__(self, callback: EventListener, scope: dict[str, str]) -> None:
        self.callback = callback
        self.scope = scope
        self.failures = 0


class EventBus:
    """Numbers memory events (1, 2, 3, …) and delivers them to subscribers and listeners."""

    def __init__(
        self,
        *,
        replay_size: int = DEFAULT_REPLAY_SIZE,
        max_queue: int = DEFAULT_MAX_QUEUE,
        numbered_by: Literal["bus", "journal"] = "bus",
    ) -> None:
        """``numbered_by="journal"``: events arrive numbered (from a store's journal, see
        ``recallstore.events.journal.JournalFeed``) and keep their ids; the bus numbers
        nothing itself, and an id not above the last one is a duplicate, dropped."""
        if numbered_by not in ("bus", "journal"):
            raise ValueError(f"numbered_by must be 'bus' or 'journal', got {numbered_by!r}")
        self.numbered_by = numbered_by
        if replay_size < 0:
            raise ValueError(f"replay_size must be >= 0, got {replay_size}")
        if max_queue < 1:
            raise ValueError(f"max_queue must be >= 1, got {max_queue}")
        self.replay_size = replay_size
        self.max_queue = max_queue
        self._lock = threading.Lock()
        self._replay: deque[MemoryEvent] = deque(maxlen=replay_size or None)
        self._subscriptions: set[Subscription] = set()
        self._listeners: list[_Listener] = []
        self._last_id = 0
        self._dropped = 0
        self._listener_failures = 0
        self._closed = False

    @property
    def last_id(self) -> int:
        """The id of the most recently published event (0 before the first)."""
        return self._last_id

    def publish(self, event: MemoryEvent) -> MemoryEvent:
        """Number ``event``, keep it for replay and deliver it; return the numbered event.

        Never blocks and never raises because of a consumer. After :meth:`close`, events
        are still numbered and returned but delivered to nobody.
        """
        wake: list[tuple[Subscription, asyncio.AbstractEventLoop]] = []
        with self._lock:
            if self.numbered_by == "journal":
                if event.id <= self._last_id:
                    return event  # already delivered (or not from a journal): never twice
                self._last_id = event.id
                numbered = event
            else:
                self._last_id += 1
                numbered = event.model_copy(update={"id": self._last_id})
            if self._closed:
                return numbered
            if self.replay_size:
                self._replay.append(numbered)
            # Queued under the bus lock, so every subscription sees ids in order even
            # when several threads publish at once.
            for subscription in self._subscriptions:
                if subscription.matches(numbered):
                    dropped, loop = subscription._offer(numbered)
                    self._dropped += dropped
                    if loop is not None:
                        wake.append((subscription, loop))
            listeners = list(self._listeners)
        for subscription, loop in wake:
            subscription._wake(loop)
        for listener in listeners:
            if scope_matches(numbered.scope, listener.scope):
                self._call(listener, numbered)
        return numbered

    def _call(self, listener: _Listener, event: MemoryEvent) -> None:
        try:
            listener.callback(event)
        except Exception:
            with self._lock:
                listener.failures += 1
                self._listener_failures += 1
                first = listener.failures == 1
            if first:
                _logger.exception(
                    "event listener %r failed (later failures are only counted)",
                    listener.callback,
                )

    def subscribe(
        self,
        *,
        scope: Mapping[str, str] | None = None,
        last_event_id: int | None = None,
        max_queue: int | None = None,
    ) -> Subscription:
        """A new subscription to events whose scope contains every pair of ``scope``.

        With ``last_event_id``, it first replays the retained events after that id (a
        :class:`StreamGap` comes first when some were already discarded). Without it,
        only events published from now on are delivered.
        """
        size = self.max_queue if max_queue is None else max_queue
        if size < 1:
            raise ValueError(f"max_queue must be >= 1, got {size}")
        if last_event_id is not None and last_event_id < 0:
            raise ValueError(f"last_event_id must be >= 0, got {last_event_id}")
        scope_filter = dict(scope or {})
        with self._lock:
            replayed: list[MemoryEvent] = []
            gap: StreamGap | None = None
            if last_event_id is not None:
                gap, retained = self._retained_after(last_event_id)
                replayed = [event for event in retained if scope_matches(event.scope, scope_filter)]
                if len(replayed) > size:
                    # A replay longer than the queue keeps its newest part, reported as lost.
                    lost = len(replayed) - size
                    replayed = replayed[lost:]
                    gap = StreamGap(
                        reason=gap.reason if gap else "overflow",
                        after_id=last_event_id,
                        first_available_id=replayed[0].id,
                        missed=(gap.missed if gap else 0) + lost,
                    )
            subscription = Subscription(self._remove, scope_filter, size, replayed, gap)
            if self._closed:
                subscription._closed = True
            else:
                self._subscriptions.add(subscription)
        return subscription

    def _retained_after(self, last_event_id: int) -> tuple[StreamGap | None, list[MemoryEvent]]:
        """Retained events after ``last_event_id``, and a gap notice if some are lost."""
        retained = list(self._replay)
        if last_event_id > self._last_id:
            # An id this bus never handed out: the client saw an earlier server process.
            first = retained[0].id if retained else None
            return StreamGap(
                reason="reset",
                after_id=last_event_id,
                first_available_id=first,
                missed=self._last_id - len(retained),
            ), retained
        after = [event for event in retained if event.id > last_event_id]
        oldest = retained[0].id if retained else self._last_id + 1
        if oldest > last_event_id + 1:
            return StreamGap(
                reason="expired",
                after_id=last_event_id,
                first_available_id=oldest if retained else None,
                missed=oldest - last_event_id - 1,
            ), after
        return None, after

    def add_listener(
        self, callback: EventListener, *, scope: Mapping[str, str] | None = None
    ) -> Callable[[], None]:
        """Call ``callback(event)`` inline for each matching event; returns a remover.

        Exceptions from ``callback`` are caught, logged once and counted.
        """
        listener = _Listener(callback, dict(scope or {}))
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def replay(self) -> tuple[MemoryEvent, ...]:
        """The events currently retained for replay, oldest first."""
        with self._lock:
            return tuple(self._replay)

    def rewrite(self, change: Callable[[MemoryEvent], MemoryEvent | None]) -> int:
        """Replace each retained event by ``change(event)``: None drops it, the same
        event keeps it; return how many were dropped or replaced.

        For what a ``forget`` erased or scrubbed in the journal: a later subscriber's
        replay (and the memory lens's feed) no longer shows it. Ids and order stay; events
        already queued for an open subscription are not recalled.
        """
        with self._lock:
            changed = 0
            kept: list[MemoryEvent] = []
            for event in self._replay:
                new = change(event)
                if new is not event:
                    changed += 1
                if new is not None:
                    kept.append(new)
            if changed:
                self._replay.clear()
                self._replay.extend(kept)
        return changed

    def stats(self) -> BusStats:
        """The bus's counters."""
        with self._lock:
            return BusStats(
                published=self._last_id,
                dropped=self._dropped,
                listener_failures=self._listener_failures,
                subscriptions=len(self._subscriptions),
                listeners=len(self._listeners),
                replay_oldest_id=self._replay[0].id if self._replay else None,
            )

    def subscription_stats(self) -> tuple[SubscriptionStats, ...]:
        """The counters of every open subscription."""
        with self._lock:
            subscriptions = list(self._subscriptions)
        return tuple(subscription.stats() for subscription in subscriptions)

    def close(self) -> None:
        """End every subscription (their ``async for`` loops finish). Idempotent."""
        with self._lock:
            self._closed = True
            subscriptions = list(self._subscriptions)
        for subscription in subscriptions:
            subscription.close()

    def _remove(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscriptions.discard(subscription)
