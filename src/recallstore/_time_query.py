"""A time phrase inside a query ("what did I tell you last week about the trip"), used.

:func:`time_boosted_search` finds the first phrase :func:`recallstore._when.find_phrase`
knows in the query text, reads it against the clock in the user's zone, and answers with
the matches observed in that window first, then the query's other matches: a *boost*,
not a filter. The choice was measured (``benchmarks/time_recall.py``, figures in
docs/benchmarks.md): on a diary whose questions name relative times, windowed-first
finds what a filter finds; on LoCoMo, whose questions name times relative to the
conversation rather than to today, a filter empties the answer where a boost leaves
it as it was. The phrase is taken out of the text searched inside the window ("last
week" is not a word the memory holds); the fallback searches the text as given.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, tzinfo

from recallstore._when import TimeWindow, UnknownTimePhrase, find_phrase, resolve_phrase
from recallstore.records import MemoryHit

__all__ = ["QueryTime", "query_time", "time_boosted_search"]

Search = Callable[[str, TimeWindow, int], Awaitable[list[MemoryHit]]]
"""``search(text, window, limit)``: the matches of ``text`` observed in ``window``."""


@dataclass(frozen=True, slots=True)
class QueryTime:
    """The time phrase found in a query, the window it names and the rest of the text."""

    phrase: str
    window: TimeWindow
    rest: str


def query_time(text: str, now: datetime, zone: tzinfo | None = None) -> QueryTime | None:
    """The time phrase of ``text`` read at ``now`` in ``zone``, or None when it has none."""
    found = find_phrase(text)
    if found is None:
        return None
    phrase, rest = found
    try:
        window = resolve_phrase(phrase, now, zone)
    except UnknownTimePhrase:
        return None
    return QueryTime(phrase, window, rest)


async def time_boosted_search(
    search: Search, text: str, limit: int, now: datetime, zone: tzinfo | None = None
) -> tuple[list[MemoryHit], QueryTime | None]:
    """The matches of ``text``, those observed in its time phrase's window first.

    Without a phrase it is one plain search. With one, the rest of the text is searched
    inside the window, and the plain search of the whole text fills the limit.
    """
    unbounded = TimeWindow(None, None)
    found = query_time(text, now, zone)
    if found is None or not found.rest.strip():
        return await search(text, unbounded, limit), found
    inside = await search(found.rest, found.window, limit)
    if len(inside) >= limit:
        return inside, found
    seen = {hit.record.id for hit in inside}
    rest = [hit for hit in await search(text, unbounded, limit) if hit.record.id not in seen]
    return [*inside, *rest[: limit - len(inside)]], found
