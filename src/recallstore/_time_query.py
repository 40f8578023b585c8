"""A time phrase inside a query ("what did I tell you last week about the trip"), used.

:func:`time_boosted_search` finds the first phrase :func:`recallstore._when.find_phrase`
knows in the query text, reads it against the clock in the user's zone, and uses the
window it names as *evidence*, never as the order: the matches observed in the window
and the query's plain matches take turns, two window matches first, then one plain
(:data:`WINDOW_TURN`). So the window's best matches lead, and a record the plain
search ranks ``r``-th (counting from 1) is still at most ``3r``-th: a question that
needs memories from outside the window (every session of a multi-session question, a
phrase read wider or narrower than meant) keeps them near the top, where a
window-first order pushed them below every weak match inside it. The choice was
measured (``benchmarks/time_recall.py``, figures in docs/benchmarks.md, "Time as
evidence"): on LongMemEval, with each session's date as ``observed_at`` and the
question's date as "now", reading phrases this way lowers no question type's
``recall_all@5`` against not reading them with keyword search; with the default
embedder temporal-reasoning loses one of 16 dev questions that only trusting the
window wholly (window-first) keeps.

The phrase is taken out of the text searched inside the window ("last week" is not a
word the memory holds). When no record of the window matches the rest of the text
("what did we talk about on Thursday": nothing that day says "talk"), the rest was
framing and the time is the question: the window's own records, newest first, stand
in for its matches, so a keyword-only store answers with Thursday's records rather
than with Tuesday's that say "talked". The plain search is of the text as given.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, tzinfo

from recallstore._when import TimeWindow, UnknownTimePhrase, find_phrase, resolve_phrase
from recallstore.records import MemoryHit

__all__ = ["QueryTime", "query_time", "time_boosted_search"]

WINDOW_TURN = 2
"""How many of the window's hits lead each of the plain search's: a record the plain
search ranks ``r``-th stays at most ``3r``-th. Measured (docs/benchmarks.md, "Time as
evidence"): one each costs the diary's time-named questions (R@10 0.926 windowed-first,
0.817 one each, 0.860 two each) and keyword LongMemEval nothing either way."""

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
    """The matches of ``text``, its time phrase's window as a bounded boost.

    Without a phrase it is one plain search. With one, the rest of the text is searched
    inside the window, and those hits and the plain search's of the whole text take
    turns (:data:`WINDOW_TURN` window hits, then one plain), deduplicated, up to
    ``limit``; when nothing in the window matches, its newest records take the
    window's turns.
    """
    unbounded = TimeWindow(None, None)
    found = query_time(text, now, zone)
    if found is None or not found.rest.strip():
        return await search(text, unbounded, limit), found
    inside = await search(found.rest, found.window, limit)
    if not inside:
        # Nothing said in the window shares a word with the question: its words were
        # framing ("what did we talk about"), and the time is what it asks for.
        inside = await search("", found.window, limit)
    plain = await search(text, unbounded, limit)
    return _alternated(inside, plain, limit), found


def _alternated(first: list[MemoryHit], second: list[MemoryHit], limit: int) -> list[MemoryHit]:
    """``first`` and ``second`` taking turns (``first`` leads with :data:`WINDOW_TURN`
    hits, ``second`` follows with one), each record once."""
    merged: list[MemoryHit] = []
    seen: set[str] = set()
    queues: list[Iterator[MemoryHit] | None] = [iter(first), iter(second)]
    turns = (WINDOW_TURN, 1)
    while len(merged) < limit and queues != [None, None]:
        for side, queue in enumerate(queues):
            taken = 0
            while queue is not None and taken < turns[side]:
                hit = next(queue, None)
                if hit is None:
                    queues[side] = queue = None
                elif hit.record.id not in seen:
                    seen.add(hit.record.id)
                    merged.append(hit)
                    taken += 1
    return merged[:limit]
