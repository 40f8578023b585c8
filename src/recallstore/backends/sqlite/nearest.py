"""The records nearest a query's vector on SQLite, under the query's filters.

Within a scope of at most :data:`~recallstore.backends.sqlite.scope_vectors.SCAN_SCOPE`
records, every row of the scope is compared, from the contiguous copy of its rows
(``sqlite.scope_vectors``), and the best are checked against the other filters by
primary key, best first, widening until enough pass; otherwise the closest rows of the
store's whole :class:`~recallstore.backends.sqlite.vectors.VectorCache` are checked the
same way. A search lists its scope before its keyword ranking (:func:`scope_listed_now`)
so that a large scope's cosines are computed while that ranking runs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from recallstore.backends._vectors import (
    Matrix,
    VectorRows,
    cosines,
    cosines_when_made,
    top_scores,
)
from recallstore.backends.sqlite.scope_vectors import ScopeCopy, scope_rows_now
from recallstore.backends.sqlite.search import _CHECK, _record_conditions
from recallstore.records import MemorySearchQuery

if TYPE_CHECKING:
    from recallstore.backends.sqlite.vectors import VectorCache

__all__ = ["COMPARED_APART", "EARLY_CHECKS", "nearest_now", "scope_listed_now"]

_RECORD_IDS: Final = "SELECT r.seq, r.id FROM memory_records AS r"


def _filters(
    query: MemorySearchQuery, now: datetime, driver: tuple[str, str] | None = None
) -> tuple[list[str], list[Any]]:
    """The conditions of ``query``'s filters on ``r``, but the ``driver`` pair's (the
    rows come from its index)."""
    where: list[str] = []
    params: list[Any] = []
    for pair in query.scope.items():
        if pair != driver:
            where.append(_CHECK["scope"])
            params.extend(pair)
    for tag in query.tags or ():
        where.append(_CHECK["tag"])
        params.append(tag)
    more, more_params = _record_conditions(query, now)
    return [*where, *more], [*params, *more_params]


def _ids_by_seq(
    db: sqlite3.Connection, seqs: Sequence[int], filters: tuple[list[str], list[Any]]
) -> dict[int, str]:
    """The ids of the records among ``seqs`` (at most 500) that pass ``filters`` (from
    :func:`_filters`)."""
    where, params = filters
    condition = " AND ".join([f"r.seq IN ({', '.join('?' * len(seqs))})", *where])
    rows = db.execute(f"{_RECORD_IDS} WHERE {condition}", [*seqs, *params]).fetchall()
    return {int(row[0]): str(row[1]) for row in rows}


def _passing(
    db: sqlite3.Connection,
    page: Sequence[tuple[float, int, str]],
    checked: dict[int, str | None],
    filters: tuple[list[str], list[Any]],
) -> list[tuple[float, str]]:
    """(score, id) of the rows of ``page`` (score, seq, id) whose records pass
    ``filters`` and are the ones the vectors were made for (the record at a seq must
    carry the id the vector was stored with); ``checked`` (seq -> id when it passes)
    gains the rows checked here."""
    _check(db, [seq for _, seq, _ in page], checked, filters)
    return [(score, key) for score, seq, key in page if checked.get(seq) == key]


def _check(
    db: sqlite3.Connection,
    seqs: Sequence[int],
    checked: dict[int, str | None],
    filters: tuple[list[str], list[Any]],
) -> None:
    """Check the records at ``seqs`` not in ``checked`` yet against ``filters``, 500 at a
    time; ``checked`` gains each (seq -> id when it passes, else None)."""
    unknown = [seq for seq in seqs if seq not in checked]
    for start in range(0, len(unknown), 500):
        chunk = unknown[start : start + 500]
        passing = _ids_by_seq(db, chunk, filters)
        checked.update((seq, passing.get(seq)) for seq in chunk)


def _best_passing(
    db: sqlite3.Connection,
    scores: Matrix,
    seqs: Matrix,
    positions: Matrix,
    n: int,
    cache: VectorCache,
    filters: tuple[list[str], list[Any]],
    checked: dict[int, str | None],
) -> list[tuple[float, str]]:
    """The ``n`` best of a scope's rows (``scores`` of the cache rows ``positions``, of
    the records at ``seqs``, in seq order) whose records pass ``filters`` and are the
    ones the vectors were made for, as (cosine, id), best first, equal cosines in seq
    order: the best are checked by primary key, ``n`` at a time, widening until ``n``
    pass, instead of every record of the scope being read. ``checked`` holds the rows
    checked already (seq -> id when it passes) and gains the others checked here."""
    wanted = n * 4
    while True:
        found: list[tuple[float, str]] = []
        best = top_scores(scores, wanted)
        step = min(max(n, 1), 500)
        for start in range(0, len(best), step):
            chosen = best[start : start + step]
            # One conversion per page, not a numpy scalar per row: a small scope's
            # page is built after the query's vector, on the search's critical path.
            at = [index for _, index in chosen]
            page = list(
                zip(
                    [score for score, _ in chosen],
                    seqs[at].tolist(),
                    cache.ids(positions[at].tolist()),
                    strict=True,
                )
            )
            found.extend(_passing(db, page, checked, filters))
            if len(found) >= n:
                return found[:n]
        if wanted >= len(seqs):
            return found
        wanted *= 4


EARLY_CHECKS: Final = 500
"""At most this many rows of a scope are checked against the filters while the query's
vector is still being made (:func:`nearest_now`); all of them when the scope holds no
more than the search asks for, as its first page would check them anyway."""

COMPARED_APART: Final = 1_000
"""A scope of at least this many rows has its cosines computed as soon as the query's
vector is made, in the thread that made it, while the connection's thread still ranks
by words (:func:`scope_listed_now`); a smaller scope's take under 0.1 ms."""

_Listed = tuple[VectorRows, tuple[ScopeCopy, tuple[str, str]] | None, "Future[Matrix] | None"]


def scope_listed_now(
    db: sqlite3.Connection, query: MemorySearchQuery, vector: Future[Matrix], cache: VectorCache
) -> _Listed:
    """:func:`nearest_now`'s first step, taken before the keyword ranking: the cache
    loaded, the scope's rows listed (:func:`scope_rows_now`) and, for a scope of at
    least :data:`COMPARED_APART` rows, their cosines begun for when ``vector`` is made
    (:func:`cosines_when_made`)."""
    rows = cache.load(db)
    scoped = scope_rows_now(db, query, cache)
    if scoped is None or len(scoped[0].seqs) < COMPARED_APART:
        return rows, scoped, None
    return rows, scoped, cosines_when_made(scoped[0].matrix, vector)


def nearest_now(
    db: sqlite3.Connection,
    query: MemorySearchQuery,
    vector_of: Callable[[], Matrix],
    n: int,
    now: datetime,
    cache: VectorCache,
    listed: _Listed | None = None,
    ready: Callable[[], bool] | None = None,
) -> list[tuple[float, str]]:
    """The ids of the ``n`` records passing ``query``'s filters closest to the vector
    ``vector_of()`` returns, as (cosine, id), best first; on the connection's thread
    (the file's embedder is checked first, :meth:`VectorCache.load`).

    The vectors come from ``cache``. Within a scope of at most :data:`SCAN_SCOPE`
    records, every row of the scope is compared (:func:`scope_rows_now` lists them,
    or finds them already gathered) and the best checked (:func:`_best_passing`);
    otherwise the closest rows of the whole cache (:meth:`VectorRows.closest`) are
    checked against the filters, best first, ``n`` at a time, widening until ``n``
    pass. ``vector_of`` is called once, after the scope's listing: a query still
    being embedded costs no time here until its vector is needed. ``listed``: that
    listing made already (:func:`scope_listed_now`), with the cosines it began.
    ``ready`` says whether ``vector_of()`` would return at once: until it does, up to
    :data:`EARLY_CHECKS` rows of the scope are checked against the filters (the
    results are the same; the checks are done while the thread would wait).
    """
    rows, scoped, early = listed or (cache.load(db), scope_rows_now(db, query, cache), None)
    if scoped is not None:
        copy, driving = scoped
        filters = _filters(query, now, driving)
        known: dict[int, str | None] = {}
        if len(copy.seqs) <= n:
            # The first page checks every row of so small a scope anyway: checked now,
            # while the query is still being embedded, rather than after its vector.
            _check(db, copy.seqs.tolist(), known, filters)
        elif ready is not None:
            # Rows are checked by primary key as they rank; while the vector is still
            # being made the thread would only wait, so a modest scope's rows are
            # checked meanwhile, a page at a time, and fewer are left for after it.
            seqs = copy.seqs[:EARLY_CHECKS].tolist()
            for start in range(0, len(seqs), max(n, 1)):
                if ready():
                    break
                _check(db, seqs[start : start + max(n, 1)], known, filters)
        scores = early.result() if early is not None else cosines(copy.matrix, vector_of())
        return _best_passing(db, scores, copy.seqs, copy.positions, n, cache, filters, known)
    filters = _filters(query, now)
    vector = vector_of()
    checked: dict[int, str | None] = {}  # seq -> id when it passes the filters
    wanted = n * 4
    while True:
        # A wider ask may put rows the narrower one did not see before checked ones,
        # so each pass walks its whole list, checking only rows not checked before.
        found: list[tuple[float, str]] = []
        closest = rows.closest(vector, wanted)
        step = min(max(n, 1), 500)
        for start in range(0, len(closest), step):
            page = [(score, *cache.record(row)) for score, row in closest[start : start + step]]
            found.extend(_passing(db, page, checked, filters))
            if len(found) >= n:
                return found[:n]
        if wanted >= rows.count:
            return found
        wanted *= 4
