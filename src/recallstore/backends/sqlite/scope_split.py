"""Which of a scope's pairs FTS5 reads, and which are checked on the rows it finds.

A scoped keyword search asks FTS5 for ``scope_terms:(pair AND pair) AND content:(…)``.
Before it scores a match, FTS5's ``bm25()`` counts the rows of every phrase of the
expression to get its idf, the scope's pairs included: their weight is 0, their
counting is not free. So a tenant's pair beside its user's cost a pass over the
tenant's whole doclist on every search of every user, and reading every match of a
small scope a walk through it again: in a 64,600-record tenant, 2-3 ms of a 10,000-record user's
search and 0.4 of a 100-record user's (issue 38, docs/benchmarks.md).

Here a pair is left out of the expression and checked on each row FTS5 finds
(``search.SCOPE_CHECK``, the record's own scope column) when it holds more than
:data:`COMMON_RATIO` times the records of the scope's narrowest pair and nearly all of
those hold it too (:data:`PASS_SHARE` of the narrowest pair's newest
:data:`SAMPLE` records: a tenant beside its user). A scope phrase adds 0.0 to
``bm25()``, so the matches come in the same order with the same scores, and the check
drops exactly the records the fuller expression would not have matched: the results
are the same (``tests/backends/sqlite/test_scope_split.py``). Other pairs stay in the
expression: one of like size costs FTS5 little, and pairs that share few records (a
user and an agent of another user's) are cheaper intersected by FTS5 than checked on
the rows of either, most of which the check would drop.

The counts come from the scope index (``memory_scope``) under growing caps: the
narrowest pair's exactly, each other pair's up to :data:`COMMON_RATIO` times it. A
scope's split is kept for :data:`REFRESH_SECONDS`; it changes what a search costs,
never what it finds, so a split that has gone stale only costs time.
"""

from __future__ import annotations

import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from recallstore.backends.sqlite.search import Filter, narrowest_count_now

__all__ = [
    "COMMON_RATIO",
    "COUNTED_LIMIT",
    "PASS_SHARE",
    "REFRESH_SECONDS",
    "SAMPLE",
    "ScopeSplit",
    "ScopeSplits",
    "split_now",
]

COMMON_RATIO: Final = 2
"""A pair holding more than this many times the narrowest pair's records may be checked
on the rows. Reading a pair in the expression costs a pass over its doclist (about 40
ns an entry, measured); checking it costs a look at each row FTS5 finds (about 1.5 µs)."""
SAMPLE: Final = 16
PASS_SHARE: Final = 0.9
"""A pair is checked only when this share of the narrowest pair's newest :data:`SAMPLE`
records hold it: FTS5's best matches beyond the room a search keeps for its filters
(a half) must pass, or every match is joined and checked."""
COUNTED_LIMIT: Final = 20_000
"""Scopes whose every pair holds more records than this are left whole: counting them
would cost more than it saves once a minute."""
REFRESH_SECONDS: Final = 60.0
"""How long a scope's split is kept before its pairs are counted again."""
_KEPT: Final = 4_096
"""How many scopes' splits are kept, the least recently searched dropped first."""

_COUNT: Final = (
    "SELECT count(*) FROM (SELECT 1 FROM memory_scope WHERE key = ? AND value = ? LIMIT ?)"
)
_SHARED: Final = (
    "SELECT count(*), coalesce(sum(EXISTS (SELECT 1 FROM memory_scope AS p "
    "WHERE p.key = ? AND p.value = ? AND p.created_us = d.created_us "
    "AND p.record_seq = d.record_seq)), 0) FROM ("
    "SELECT created_us, record_seq FROM memory_scope WHERE key = ? AND value = ? "
    "ORDER BY created_us DESC LIMIT ?) AS d"
)
"""Of a pair's newest records (the second pair, the limit), how many hold the first: a
look-up each in the scope index, whose rows of one record share its creation time."""


@dataclass(frozen=True, slots=True)
class ScopeSplit:
    """A scope's pairs as a keyword search uses them: ``indexed`` in FTS5's expression,
    ``checked`` on each row it finds."""

    indexed: dict[str, str]
    checked: tuple[tuple[str, str], ...]


class ScopeSplits:
    """Each recently searched scope's :class:`ScopeSplit`, counted again after
    :data:`REFRESH_SECONDS` (``clock`` in seconds, monotonic by default)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._splits: OrderedDict[tuple[tuple[str, str], ...], tuple[ScopeSplit, float]] = (
            OrderedDict()
        )

    def split_now(
        self,
        db: sqlite3.Connection,
        scope: Mapping[str, str],
        narrowest: tuple[int, int] | None = None,
    ) -> ScopeSplit:
        """``scope``'s split, counted on the connection's thread when not kept or due;
        ``narrowest``: its narrowest pair and that pair's count, when the caller has
        them (``search.narrowest_count_now``)."""
        if len(scope) < 2:
            return ScopeSplit(dict(scope), ())
        key = tuple(scope.items())
        now = self._clock()
        kept = self._splits.get(key)
        if kept is not None and now < kept[1]:
            self._splits.move_to_end(key)
            return kept[0]
        split = split_now(db, scope, narrowest)
        self._splits[key] = (split, now + REFRESH_SECONDS)
        self._splits.move_to_end(key)
        while len(self._splits) > _KEPT:
            self._splits.popitem(last=False)
        return split


def split_now(
    db: sqlite3.Connection,
    scope: Mapping[str, str],
    narrowest: tuple[int, int] | None = None,
) -> ScopeSplit:
    """``scope``'s split by the scope index's counts now (see the module); ``narrowest``
    as :meth:`ScopeSplits.split_now` takes it."""
    pairs = list(scope.items())
    filters: list[Filter] = [("scope", pair) for pair in pairs]
    found = narrowest or narrowest_count_now(db, filters, COUNTED_LIMIT)
    if found is None:
        return ScopeSplit(dict(scope), ())
    driver, count = found
    bound = COMMON_RATIO * count
    indexed: dict[str, str] = {}
    checked: list[tuple[str, str]] = []
    for index, pair in enumerate(pairs):
        if (
            index != driver
            and _count_now(db, pair, bound + 1) > bound
            and _shared_now(db, pair, pairs[driver]) >= PASS_SHARE
        ):
            checked.append(pair)
        else:
            indexed[pair[0]] = pair[1]
    return ScopeSplit(indexed, tuple(checked))


def _count_now(db: sqlite3.Connection, pair: tuple[str, str], cap: int) -> int:
    return int(db.execute(_COUNT, (*pair, cap)).fetchone()[0])


def _shared_now(db: sqlite3.Connection, pair: tuple[str, str], narrowest: tuple[str, str]) -> float:
    """The share of ``narrowest``'s newest :data:`SAMPLE` records holding ``pair`` (1.0
    when it has none)."""
    sampled, holding = db.execute(_SHARED, (*pair, *narrowest, SAMPLE)).fetchone()
    return float(holding) / float(sampled) if sampled else 1.0
