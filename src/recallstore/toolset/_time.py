"""The ``since`` / ``until`` arguments of the memory tools, and the window a result echoes.

A model passes times as people say them ("last week", "in March", "2025-03-14");
:func:`searched_window` reads them with :mod:`recallstore._when` against the host's
clock and the session's time zone, so the same words always name the same window, and
the result shows the window that was searched, in the user's zone. A phrase the
resolver cannot read is the model's mistake: an ``invalid_arguments`` result naming it,
with examples that work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from recallstore._time_query import time_boosted_search
from recallstore._when import TimeWindow, UnknownTimePhrase, resolve_since_until
from recallstore.records import MemoryHit
from recallstore.tools import ToolFailure

if TYPE_CHECKING:
    from recallstore.scoped_memory import ScopedMemory

__all__ = ["SearchedWindow", "Since", "Until", "search_with_query_time", "searched_window"]

_MAX_PHRASE_CHARS = 64

Since = Annotated[
    str | None,
    Field(
        max_length=_MAX_PHRASE_CHARS,
        description=(
            "Only memories of things said or done from the start of this time on: an ISO "
            'date (2025-03-14) or words such as "yesterday", "last week", "in March", '
            '"two days ago", "last summer". Default: null (no lower bound).'
        ),
    ),
]
Until = Annotated[
    str | None,
    Field(
        max_length=_MAX_PHRASE_CHARS,
        description=(
            "Only memories of things said or done up to the end of this time, in the same "
            'forms as since. since and until the same ("last week") means exactly that '
            "period. Default: null (no upper bound)."
        ),
    ),
]


class SearchedWindow(BaseModel):
    """The observed window a search or listing was limited to, in the user's time zone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    since: str | None = Field(description="Start of the window (inclusive), ISO 8601.")
    until: str | None = Field(description="End of the window (exclusive), ISO 8601.")
    time_zone: str = Field(description="The zone the phrases were read in.")
    from_query: str | None = Field(
        default=None,
        description="The time phrase read from the query, when since/until were not given: "
        "two memories inside the window, then one of the query's other matches, in turn.",
    )


def searched_window(
    memory: ScopedMemory, since: str | None, until: str | None
) -> tuple[TimeWindow, SearchedWindow | None]:
    """The window ``since`` / ``until`` name for ``memory``'s user, and its echo (None
    when neither is given); :class:`ToolFailure` ``invalid_arguments`` when either
    phrase cannot be read or the window is empty."""
    if not (since and since.strip()) and not (until and until.strip()):
        return TimeWindow(None, None), None
    zone, now = memory.time_zone, memory.now()
    for field, phrase in (("since", since), ("until", until)):
        try:
            if field == "since":
                resolve_since_until(phrase, None, now, zone)
            else:
                resolve_since_until(None, phrase, now, zone)
        except UnknownTimePhrase as exc:
            raise ToolFailure("invalid_arguments", f"{field}: {exc}", [field]) from None
    try:
        window = resolve_since_until(since, until, now, zone)
    except ValueError as exc:
        raise ToolFailure("invalid_arguments", str(exc), ["since", "until"]) from None
    start, end = window.local(zone)
    return window, SearchedWindow(since=start, until=end, time_zone=str(zone or "UTC"))


async def search_with_query_time(
    memory: ScopedMemory, query: str, **filters: Any
) -> tuple[list[MemoryHit], SearchedWindow | None]:
    """``memory.search(query)`` with the query's own time phrase, if any, as a boost
    (``recallstore._time_query``), and the window it named for the result to echo."""
    limit: int = filters.pop("limit")

    async def search(text: str, window: TimeWindow, count: int) -> list[MemoryHit]:
        return await memory.search(
            text,
            limit=count,
            observed_after=window.start,
            observed_before=window.end,
            **filters,
        )

    zone = memory.time_zone
    hits, found = await time_boosted_search(search, query, limit, memory.now(), zone)
    if found is None or not found.rest.strip():
        return hits, None
    start, end = found.window.local(zone)
    echo = SearchedWindow(
        since=start, until=end, time_zone=str(zone or "UTC"), from_query=found.phrase
    )
    return hits, echo
