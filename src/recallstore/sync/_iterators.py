"""The library's async iterators over a store as blocking generators on a
:class:`~recallstore.sync.SyncMemoryStore`: each item is fetched on the store's loop
while the caller waits; a generator closed early (``break``, garbage collection) closes
the async iterator on that loop too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Mapping
from typing import Any, TypeVar

from recallstore.events import MemoryEvent
from recallstore.events.journal import tail_events as _tail_events
from recallstore.jsonl import iter_records as _iter_records
from recallstore.records import MemoryRecord
from recallstore.sync._calls import checked_loop
from recallstore.sync._store import SyncMemoryStore

__all__ = ["iter_records", "tail_events"]

T = TypeVar("T")


async def _next(items: AsyncIterator[T]) -> list[T]:
    """The next item, or nothing at the end."""
    try:
        return [await anext(items)]
    except StopAsyncIteration:
        return []


async def _close(items: AsyncIterator[Any]) -> None:
    close = getattr(items, "aclose", None)
    if close is not None:
        await close()


def _blocking(store: SyncMemoryStore, items: AsyncIterator[T]) -> Generator[T, None, None]:
    loop = store.loop
    try:
        while found := loop.run(_next(items)):
            yield found[0]
    finally:
        if not loop.closed and not loop.forked:
            loop.run(_close(items))


def iter_records(
    store: SyncMemoryStore, scope: Mapping[str, str] | None = None
) -> Generator[MemoryRecord, None, None]:
    """:func:`recallstore.jsonl.iter_records`, blocking: every record matching ``scope``
    (invalidated and expired included), oldest first, fetched as the caller iterates."""
    checked_loop(store, "iter_records")
    return _blocking(store, _iter_records(store.store, scope))


def tail_events(
    store: SyncMemoryStore,
    *,
    last: int = 20,
    follow: bool = False,
    scope: Mapping[str, str] | None = None,
    include_content: bool = False,
    include_query_text: bool = False,
) -> Generator[MemoryEvent, None, None]:
    """:func:`recallstore.events.journal.tail_events`, blocking: the newest ``last``
    retained events of the store's journal, then with ``follow`` each new one as it
    commits (the iteration then waits for it; Ctrl+C stops it)."""
    checked_loop(store, "tail_events")
    events = _tail_events(
        store.store,
        last=last,
        follow=follow,
        scope=scope,
        include_content=include_content,
        include_query_text=include_query_text,
    )
    return _blocking(store, events)
