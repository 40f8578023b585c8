"""A time phrase inside a query ("what did I tell you last week about the trip"), used.

:func:`time_boosted_search` finds the first phrase :func:`recallstore._when.find_phrase`
knows in the query text, reads it against the clock in the user's zone, and uses the
window it names as *evidence*, never as the order: the window's matches and the
query's plain matches take turns, two window matches first, then one plain
(:data:`WINDOW_TURN`). When the phrase names a time only roughly ("two months ago",
"lately": :func:`recallstore._when.is_approximate`), only the window's strong matches
(at least :data:`WINDOW_LEAD` of its best match's score) lead, and its weaker ones come
after the plain ones; a calendar span ("in May 2023", "last week") is what the
question asks for, and all its matches lead. So the window's best matches lead, and a
record the plain search ranks ``r``-th (counting from 1) is still at most ``3r``-th: a
question that needs memories from outside the window (every session of a
multi-session question, a phrase read wider or narrower than meant) keeps them near
the top, where a window-first order pushed them below every weak match inside it. The
choice was measured (``benchmarks/time_recall.py``, figures in docs/benchmarks.md,
"Time as evidence"): on LongMemEval, with each session's date as ``observed_at`` and
the question's date as "now", reading phrases this way lowers no question type's
``recall_all@5`` against not reading them, with keyword search or the default
embedder.

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

from recallstore._when import (
    TimeWindow,
    UnknownTimePhrase,
    find_phrase,
    is_approximate,
    resolve_phrase,
)
from recallstore.records import MemoryHit

__all__ = ["QueryTime", "query_time", "time_boosted_search"]

WINDOW_TURN = 2
"""How many of the window's hits lead each of the plain search's: a record the plain
search ranks ``r``-th stays at most ``3r``-th. Measured (docs/benchmarks.md, "Time as
evidence"): one each costs the diary's time-named questions (R@10 0.926 windowed-first,
0.817 one each, 0.860 two each) and keyword LongMemEval nothing either way."""

WINDOW_LEAD = 0.3
"""How close to its window's best match a match must score to lead, when the phrase is
rough (:func:`recallstore._when.is_approximate`): at least this fraction of the best's
score. A window's second-best match often shares one common word with the question,
and letting it take a turn ahead of the plain search's matches cost the session that
the plain search ranked third (a "two months ago" question with three answer
sessions, one of them older). Measured (docs/benchmarks.md, "Time as evidence"):
0.25-0.4 keep the diary and LongMemEval's keyword figures and lift the default
embedder's temporal questions above the plain search's; 0.2 and below lose the "two
months ago" question, 0.5 and above cost the diary. A calendar span's weak matches
lead all the same: on LoCoMo's questions that name a date ("on October 13, 2023"),
holding them back lost 6 blocks of 105 and won one."""

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
    inside the window; the window's hits (a rough phrase's: its strong ones,
    :data:`WINDOW_LEAD`) and the plain search's of the whole text take turns
    (:data:`WINDOW_TURN` window hits, then one plain), then the plain search's go on,
    then the window's weaker hits, each record once, up to ``limit``. When nothing in
    the window matches, its newest records take the window's turns.
    """
    unbounded = TimeWindow(None, None)
    found = query_time(text, now, zone)
    if found is None or not found.rest.strip():
        return await search(text, unbounded, limit), found
    inside = await search(found.rest, found.window, limit)
    if inside:
        # A calendar span ("in May 2023") is what the question names; a rough phrase's
        # window ("two months ago") is only a reading, whose weak matches must not lead.
        rough = is_approximate(found.phrase)
        leading, weaker = _strong_and_weak(inside) if rough else (inside, [])
    else:
        # Nothing said in the window shares a word with the question: its words were
        # framing ("what did we talk about"), and the time is what it asks for.
        leading, weaker = await search("", found.window, limit), []
    plain = await search(text, unbounded, limit)
    merged = _alternated(leading, plain, limit)
    taken = {hit.record.id for hit in merged}
    return [*merged, *(hit for hit in weaker if hit.record.id not in taken)][:limit], found


def _strong_and_weak(hits: list[MemoryHit]) -> tuple[list[MemoryHit], list[MemoryHit]]:
    """``hits`` split into those scoring at least :data:`WINDOW_LEAD` of the best and
    the rest, in order; the best alone leads when the best score is not positive, and
    all of them when the store gives no scores."""
    scores = [hit.score for hit in hits]
    if None in scores:
        return hits, []
    values = [score or 0.0 for score in scores]
    best = max(values)
    if best <= 0:
        return hits[:1], hits[1:]
    cut = WINDOW_LEAD * best
    strong = [hit for hit, value in zip(hits, values, strict=True) if value >= cut]
    return strong, [hit for hit, value in zip(hits, values, strict=True) if value < cut]


def _alternated(first: list[MemoryHit], second: list[MemoryHit], limit: int) -> list[MemoryHit]:
    """``first`` and ``second`` taking turns (``first`` leads with :data:`WINDOW_TURN`
    hits, ``second`` follows with one), each record once; the other goes on alone once
    one is spent."""
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
