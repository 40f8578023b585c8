"""Events from a store's journal: read, tail, and feed an :class:`EventBus` with them.

A store with the ``"journal"`` extension (SQLite, Postgres) keeps its memory events
in its own database (``recallstore.backends.journal``). This module turns journal
rows into event models and publishes them, so a process that did not make the calls
(``recallstore serve``, an exporter) sees every process's events:

* :class:`JournalFeed` follows the journal and publishes each event on a bus created
  with ``EventBus(numbered_by="journal")``: event ids are journal ids, the same in
  every process and after a restart, so a client's ``Last-Event-ID`` stays valid;
* :func:`tail_events` is the iterator behind ``recallstore events tail``.

Opt-in fields (content, reasons, query text) are dropped here unless the reader opts
in too, so a journal written with ``include_content`` is not streamed with it unless
asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from recallstore.backends.journal import JournalEntry, SupportsJournal
from recallstore.errors import ConfigurationError
from recallstore.events.bus import EventBus
from recallstore.events.catalogue import EVENT_CATALOGUE, parse_event
from recallstore.events.models import OPT_IN_KEY, MemoryEvent, StreamGap
from recallstore.store import JOURNAL_EXTENSION, MemoryStore, StoreLifecycle, scope_matches

if TYPE_CHECKING:
    from recallstore.events.observed import StoreTelemetry

__all__ = ["JournalFeed", "journal_event", "journal_of", "tail_events"]

_logger = logging.getLogger("recallstore.events")
_READ_PAGE: Final = 500


def _opt_in_fields() -> dict[str, dict[str, str]]:
    """For each event type: data field → the opt-in flag it needs."""
    found: dict[str, dict[str, str]] = {}
    for entry in EVENT_CATALOGUE:
        fields = {}
        for name, info in entry.data_model.model_fields.items():
            extra = info.json_schema_extra
            if isinstance(extra, dict) and OPT_IN_KEY in extra:
                fields[name] = str(extra[OPT_IN_KEY])
        found[entry.name] = fields
    return found


_OPT_IN: Final = _opt_in_fields()


def journal_event(
    entry: JournalEntry, *, include_content: bool = False, include_query_text: bool = False
) -> MemoryEvent:
    """The event model of a journal entry, its id the journal's, opt-in fields dropped
    unless the matching flag is set."""
    allowed = {"include_content": include_content, "include_query_text": include_query_text}
    data: dict[str, Any] = dict(entry.envelope.get("data") or {})
    for name, flag in _OPT_IN.get(entry.type, {}).items():
        if not allowed.get(flag, False):
            data[name] = None
    return parse_event({**entry.envelope, "data": data, "id": entry.id})


def journal_of(store: MemoryStore) -> SupportsJournal:
    """The journal of ``store`` (or of the store it wraps, for an observed store).

    Raises :class:`~recallstore.errors.ConfigurationError` when it keeps none.
    """
    inner = getattr(store, "inner", store)
    if JOURNAL_EXTENSION in inner.capabilities().extensions and isinstance(inner, SupportsJournal):
        return inner
    raise ConfigurationError(
        f"{type(inner).__name__} keeps no event journal (the '{JOURNAL_EXTENSION}' "
        "extension: SqliteMemoryStore and PostgresMemoryStore with journal settings)"
    )


async def tail_events(
    store: MemoryStore,
    *,
    last: int = 20,
    follow: bool = False,
    scope: Mapping[str, str] | None = None,
    include_content: bool = False,
    include_query_text: bool = False,
) -> AsyncIterator[MemoryEvent]:
    """The newest ``last`` retained events (oldest first), then with ``follow`` each
    new one as it commits, from any process. ``scope`` keeps events whose scope holds
    every pair."""
    journal = journal_of(store)
    wanted = dict(scope or {})
    _, newest = await journal.journal_bounds()
    recent: list[MemoryEvent] = []
    # Without a filter the newest ``last`` ids suffice; with one, read all that is kept.
    after = 0 if wanted else max(0, newest - last)
    while True:
        entries = await journal.read_journal(after, _READ_PAGE)
        for entry in entries:
            event = journal_event(
                entry, include_content=include_content, include_query_text=include_query_text
            )
            if scope_matches(event.scope, wanted):
                recent.append(event)
                del recent[: max(0, len(recent) - last)]
            after = entry.id
        if len(entries) < _READ_PAGE:
            break
    for event in recent:
        yield event
    if not follow:
        return
    async for entry in journal.follow_journal(after):
        event = journal_event(
            entry, include_content=include_content, include_query_text=include_query_text
        )
        if scope_matches(event.scope, wanted):
            yield event


class JournalFeed(StoreLifecycle):
    """Publishes a store's journal on ``bus``, from any process's writes, as they commit.

    ``bus`` must be created with ``EventBus(numbered_by="journal")``. On ``open()`` the
    newest ``bus.replay_size`` retained events are published first (so a client that
    reconnects after a server restart resumes from its ``Last-Event-ID``), then every new
    one. ``telemetry`` (e.g. ``OtelInstrumentation``) gets each event as a log record.
    """

    def __init__(
        self,
        store: MemoryStore,
        bus: EventBus,
        *,
        include_content: bool = False,
        include_query_text: bool = False,
        telemetry: StoreTelemetry | None = None,
    ) -> None:
        if bus.numbered_by != "journal":
            raise ConfigurationError(
                "JournalFeed needs EventBus(numbered_by='journal'): its event ids are the journal's"
            )
        self._journal = journal_of(store)
        self.bus = bus
        self.include_content = include_content
        self.include_query_text = include_query_text
        self.telemetry = telemetry
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Publish the retained backlog (up to the bus's replay size), then follow.

        ``async with JournalFeed(...)`` opens and closes it."""
        if self._task is not None:
            return
        _, newest = await self._journal.journal_bounds()
        after = max(0, newest - self.bus.replay_size)
        while True:
            entries = await self._journal.read_journal(after, _READ_PAGE)
            for entry in entries:
                self._publish(entry)
                after = entry.id
            if len(entries) < _READ_PAGE:
                break
        self._task = asyncio.get_running_loop().create_task(self._follow(after))

    async def history(
        self, after_id: int, before_id: int
    ) -> tuple[StreamGap | None, list[MemoryEvent]]:
        """Retained events with ids in (``after_id``, ``before_id``), oldest first, and an
        ``expired`` gap when the journal no longer holds some of them (for the SSE app:
        a ``Last-Event-ID`` older than the bus's replay buffer)."""
        oldest, _ = await self._journal.journal_bounds()
        events: list[MemoryEvent] = []
        after = after_id
        while after < before_id - 1:
            entries = await self._journal.read_journal(after, _READ_PAGE)
            found = (self._event(entry) for entry in entries if entry.id < before_id)
            events += [event for event in found if event is not None]
            if len(entries) < _READ_PAGE or entries[-1].id >= before_id:
                break
            after = entries[-1].id
        # Ids below the oldest retained one (and below before_id) are gone for good.
        lost_until = before_id if oldest is None else min(oldest, before_id)
        gap = None
        if lost_until > after_id + 1:
            gap = StreamGap(
                reason="expired",
                after_id=after_id,
                first_available_id=events[0].id if events else before_id,
                missed=lost_until - after_id - 1,
            )
        return gap, events

    async def aclose(self) -> None:
        """Stop following (the bus stays open)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _follow(self, after: int) -> None:
        while True:
            try:
                async for entry in self._journal.follow_journal(after):
                    self._publish(entry)
                    after = entry.id
            except asyncio.CancelledError:
                raise
            except Exception:
                # A locked or briefly unreachable database: try again shortly.
                _logger.warning("reading the event journal failed; retrying", exc_info=True)
                await asyncio.sleep(1.0)

    def _event(self, entry: JournalEntry) -> MemoryEvent | None:
        """The entry's event; None (logged) for one this version cannot read, e.g. a
        type added by a newer recallstore writing to the same database."""
        try:
            return journal_event(
                entry,
                include_content=self.include_content,
                include_query_text=self.include_query_text,
            )
        except Exception:
            _logger.warning("skipped journal entry %d: not a known event", entry.id)
            return None

    def _publish(self, entry: JournalEntry) -> None:
        event = self._event(entry)
        if event is None:
            return
        published = self.bus.publish(event)
        if self.telemetry is not None:
            self.telemetry.emit(published)
