"""The SQLite backend's keyword search, ranked by ``_search.query`` in one hand-off.

The FTS5 expression, the candidate SQL and the statistics cache are in
``sqlite.search``; here the candidates are read (every match of a small scope, else
FTS5's best, see :func:`_best_now`) and ranked on the connection's thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Final

import aiosqlite

from recallstore._search.query import (
    EXHAUSTIVE_SCOPE,
    RERANK_CANDIDATES,
    Candidate,
    CorpusStatistics,
    QueryTerm,
    rank_records_now,
)
from recallstore.backends._hits import scored_hit
from recallstore.backends._vectors import Matrix
from recallstore.backends.sqlite.nearest import nearest_now, scope_listed_now
from recallstore.backends.sqlite.pruning import best_pruned_now
from recallstore.backends.sqlite.rows import COLUMNS, on_thread, record_from_row, rows_by_id
from recallstore.backends.sqlite.scope_split import ScopeSplit, ScopeSplits
from recallstore.backends.sqlite.search import (
    Filter,
    FtsStatistics,
    _record_conditions,
    candidates_sql,
    match_expression,
    narrowest_count_now,
    scope_checks,
)
from recallstore.backends.sqlite.vectors import VectorCache
from recallstore.records import MemoryHit, MemorySearchQuery

__all__ = ["hybrid_rows_now", "ranked_rows_now", "ranked_search"]

Fusing = Callable[
    [MemorySearchQuery, Sequence[tuple[float, str]], Sequence[tuple[float, str]]],
    list[tuple[float, str]],
]
"""How a hybrid store fuses its keyword ranking with its nearest records (``_fuse``)."""


_CANDIDATE_COLUMNS: Final = "r.seq, r.content, r.created_at, r.id"
"""What ranking needs of a candidate; whole rows are read for the hits alone."""


_BEST_MATCHES: Final = (
    "SELECT rowid, bm25(memory_fts, 1.0, 0.0) AS score FROM memory_fts "
    "WHERE memory_fts MATCH ? ORDER BY score, rowid DESC LIMIT ?"
)
"""FTS5's best matches by bm25() alone, equal scores last written first: a bounded sort."""
_FILTER_ROOM: Final = 2
""":func:`_best_now` reads ``n // _FILTER_ROOM`` matches beyond the ``n`` best, for
records its filters drop (invalidated, expired, of another kind); only when more are
dropped does it join every match."""


def _rows_by_seq_now(db: sqlite3.Connection, seqs: list[int]) -> dict[int, tuple[Any, ...]]:
    marks = ", ".join("?" * len(seqs))
    rows = db.execute(
        f"SELECT seq, {COLUMNS} FROM memory_records WHERE seq IN ({marks})", seqs
    ).fetchall()
    return {int(row[0]): tuple(row[1:]) for row in rows}


def _candidates_now(
    db: sqlite3.Connection,
    query: MemorySearchQuery,
    now: datetime,
    terms: Sequence[QueryTerm],
    n: int,
    statistics: FtsStatistics,
    scopes: ScopeSplits,
) -> list[Candidate[int]]:
    """A keyword query's candidates, in one hand-off with what they need: the
    statistics cache checked and the query stems' document frequencies read, and
    whether the scope is small enough to re-score every match (``EXHAUSTIVE_SCOPE``)
    or FTS5's own best ``n`` are re-scored. The scope's broad pairs are checked on
    the rows instead of read by FTS5 (``sqlite.scope_split``)."""
    statistics.refresh_now(db)
    statistics.count_now(db, [term.stem for term in terms])
    pairs: list[Filter] = [("scope", pair) for pair in query.scope.items()]
    narrowest = narrowest_count_now(db, pairs, EXHAUSTIVE_SCOPE)
    exhaustive = narrowest is not None
    split = scopes.split_now(db, query.scope, narrowest)
    expression = match_expression(split.indexed, terms, query.query or "")
    if exhaustive:
        sql, params = candidates_sql(
            query, now, ordered=False, columns=_CANDIDATE_COLUMNS, checked=split.checked
        )
        rows = db.execute(sql, [expression, *params, EXHAUSTIVE_SCOPE]).fetchall()
    elif query.tags:
        rows = _best_joined_now(db, query, now, expression, n, split)
    else:
        pruned = _pruned_now(db, query, terms, n, statistics, split)
        rows = _best_now(db, query, now, expression, n, split, pruned)
    return [
        Candidate(int(seq), str(content), (str(created), str(record_id)))
        for seq, content, created, record_id in rows
    ]


def _best_joined_now(
    db: sqlite3.Connection,
    query: MemorySearchQuery,
    now: datetime,
    expression: str,
    n: int,
    split: ScopeSplit,
) -> list[tuple[Any, ...]]:
    """FTS5's best ``n`` matches passing the query's filters, every match joined."""
    # FTS5's best n by seq alone, then their content: SQLite copies every selected
    # column of every match into the sorter, and with the content that cost as much
    # again as FTS5's own bm25() ordering.
    best, params = candidates_sql(query, now, ordered=True, columns="r.seq", checked=split.checked)
    sql = (
        f"SELECT {_CANDIDATE_COLUMNS} FROM ({best}) AS best "
        "JOIN memory_records AS r ON r.seq = best.seq"
    )
    return db.execute(sql, [expression, *params, n]).fetchall()


def _pruned_now(
    db: sqlite3.Connection,
    query: MemorySearchQuery,
    terms: Sequence[QueryTerm],
    n: int,
    statistics: FtsStatistics,
    split: ScopeSplit,
) -> list[tuple[int, float]] | None:
    """FTS5's best ``n + n // _FILTER_ROOM`` matches by max-score pruning
    (``sqlite.pruning``), or None when it does not apply: query text other than ASCII
    (its FTS5 phrases are then more than its terms' words), or another tokenizer."""
    text = query.query or ""
    if not text.isascii():
        return None
    figures = statistics.figures_now(db, [term.stem for term in terms])
    if figures is None:
        return None
    words = [term.word for term in terms]
    return best_pruned_now(db, split.indexed, words, figures, n + n // _FILTER_ROOM)


def _best_now(
    db: sqlite3.Connection,
    query: MemorySearchQuery,
    now: datetime,
    expression: str,
    n: int,
    split: ScopeSplit,
    pruned: list[tuple[int, float]] | None = None,
) -> list[tuple[Any, ...]]:
    """:func:`_best_joined_now`, reading records for FTS5's best matches only.

    Joining every match to its record (for the filters) cost as much as FTS5's bm25()
    itself. FTS5 alone finds its best ``n`` and a few more (:data:`_FILTER_ROOM`) in the
    same order as the full join, by (bm25(), seq descending); their records are read
    and filtered, and when ``n`` pass they are the full join's best ``n``. Only when
    the filters drop more (many invalidated or expired records among the best) is the
    full join asked. ``pruned``: the same matches found by max-score pruning, when
    it applied (:func:`_pruned_now`).
    """
    room = n + n // _FILTER_ROOM
    matches = (
        pruned if pruned is not None else db.execute(_BEST_MATCHES, (expression, room)).fetchall()
    )
    if not matches:
        return []
    place = {int(seq): index for index, (seq, _) in enumerate(matches)}
    where, params = _record_conditions(query, now)
    checks, check_params = scope_checks(split.checked)
    marks = ", ".join("?" * len(place))
    rows = db.execute(
        f"SELECT {_CANDIDATE_COLUMNS} FROM memory_records AS r "
        f"WHERE {' AND '.join([f'r.seq IN ({marks})', *checks, *where])}",
        [*place, *check_params, *params],
    ).fetchall()
    if len(rows) < n and len(matches) == room:
        return _best_joined_now(db, query, now, expression, n, split)
    rows.sort(key=lambda row: place[int(row[0])])
    return rows[:n]


async def ranked_search(
    conn: aiosqlite.Connection,
    query: MemorySearchQuery,
    now: datetime,
    statistics: FtsStatistics,
    scopes: ScopeSplits,
) -> list[MemoryHit]:
    """The hits of a keyword ``query`` (not a listing), ranked by ``rank_records``.

    One hand-off to the connection's thread (:func:`ranked_rows_now`): the ranking
    runs there (:func:`~recallstore._search.query.rank_records_now`), reading the candidates
    as (seq, content, recency) only, the document frequencies not cached yet, then the
    whole rows of the hits.
    """
    ranked = await on_thread(conn, ranked_rows_now, query, now, statistics, scopes)
    return [scored_hit(record_from_row(row), score) for score, row in ranked]


@contextmanager
def _one_snapshot(db: sqlite3.Connection) -> Iterator[None]:
    """One read transaction around a search's statements, so all of them see the file
    as it was at the first: a record another connection deletes meanwhile, whose seq a
    new record then takes, is never read in place of the one that was ranked."""
    db.execute("BEGIN").close()
    try:
        yield
    finally:
        if db.in_transaction:
            db.execute("COMMIT").close()  # it only read


def ranked_rows_now(
    db: sqlite3.Connection,
    query: MemorySearchQuery,
    now: datetime,
    statistics: FtsStatistics,
    scopes: ScopeSplits,
) -> list[tuple[float, tuple[Any, ...]]]:
    """The hits of a keyword ``query`` as (score, row), on the connection's thread."""
    with _one_snapshot(db):
        ranked = _ranked_now(db, query, now, statistics, scopes)
        if not ranked:
            return []
        rows = _rows_by_seq_now(db, [seq for _, seq, _ in ranked])
    return [(score, rows[seq]) for score, seq, _ in ranked]


def _ranked_now(
    db: sqlite3.Connection,
    query: MemorySearchQuery,
    now: datetime,
    statistics: FtsStatistics,
    scopes: ScopeSplits,
) -> list[tuple[float, int, str]]:
    """The keyword ranking of ``query`` as (score, seq, id), best first."""
    ids: dict[int, str] = {}

    def fetch(terms: Sequence[QueryTerm], n: int) -> list[Candidate[int]]:
        found = _candidates_now(db, query, now, terms, n, statistics, scopes)
        ids.update((candidate.item, candidate.recency[1]) for candidate in found)
        return found

    def lookup(stems: Sequence[str]) -> CorpusStatistics:
        return statistics.lookup_now(db, stems)

    text = query.query or ""
    ranked = rank_records_now(text, fetch, lookup, query.limit, candidates=RERANK_CANDIDATES)
    return [(score, seq, ids[seq]) for score, seq in ranked]


def hybrid_rows_now(
    db: sqlite3.Connection,
    query: MemorySearchQuery,
    keyword: MemorySearchQuery,
    vector: Future[Matrix],
    now: datetime,
    statistics: FtsStatistics,
    scopes: ScopeSplits,
    cache: VectorCache,
    fusing: Fusing,
) -> list[tuple[float, tuple[Any, ...]]]:
    """A hybrid search's hits as (fused score, row), in one hand-off: the ranking of
    ``keyword`` (``query`` at the fusion depth) and as many records nearest the query's
    vector under the same filters, fused by ``fusing``; whole rows are read for the hits
    only. The scope's rows are listed first (:func:`scope_listed_now`: a large scope's
    cosines are computed as soon as ``vector`` is made), then the keyword ranking runs
    while the query may still be being embedded; ``vector`` is waited for only after
    it (and raises what the embedding raised)."""
    with _one_snapshot(db):
        listed = scope_listed_now(db, query, vector, cache)
        ranked = _ranked_now(db, keyword, now, statistics, scopes)
        nearest = nearest_now(
            db, query, vector.result, keyword.limit, now, cache, listed, vector.done
        )
        fused = fusing(query, [(score, key) for score, _, key in ranked], nearest)
        rows = rows_by_id(db, COLUMNS, [key for _, key in fused])
    return [(score, tuple(rows[key])) for score, key in fused]
