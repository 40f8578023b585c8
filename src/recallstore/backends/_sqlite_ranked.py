"""The SQLite backend's keyword search, ranked by ``_query`` in one hand-off.

The FTS5 expression, the candidate SQL and the statistics cache are in
``_sqlite_search``; here the candidates are read (every match of a small scope, else
FTS5's best, see :func:`_best_now`) and ranked on the connection's thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

import aiosqlite

from recallstore._query import (
    EXHAUSTIVE_SCOPE,
    RERANK_CANDIDATES,
    Candidate,
    CorpusStatistics,
    QueryTerm,
    rank_records_now,
)
from recallstore.backends._sqlite_rows import COLUMNS, on_thread, record_from_row
from recallstore.backends._sqlite_search import (
    Filter,
    FtsStatistics,
    _capped_counts_now,
    _record_conditions,
    candidates_sql,
    match_expression,
)
from recallstore.records import MemoryHit, MemorySearchQuery

__all__ = ["ranked_rows", "ranked_rows_now", "ranked_search"]


_CANDIDATE_COLUMNS: Final = "r.seq, r.content, r.created_at, r.id"
"""What ranking needs of a candidate; whole rows are read for the hits alone."""


_RANKED_MATCHES: Final = (
    "SELECT seq, score, count(*) OVER () AS kept FROM (SELECT seq, score, "
    "rank() OVER (ORDER BY score) AS place FROM (SELECT rowid AS seq, "
    "bm25(memory_fts, 1.0, 0.0) AS score FROM memory_fts WHERE memory_fts MATCH ?)) "
    "WHERE place <= ?"
)
"""Every match scoring at least the n-th best's bm25() (FTS5 alone, ties kept)."""


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
) -> list[Candidate[int]]:
    """A keyword query's candidates, in one hand-off with what they need: the
    statistics cache checked and the query stems' document frequencies read, and
    whether the scope is small enough to re-score every match (``EXHAUSTIVE_SCOPE``)
    or FTS5's own best ``n`` are re-scored."""
    statistics.refresh_now(db)
    statistics.count_now(db, [term.stem for term in terms])
    pairs: list[Filter] = [("scope", pair) for pair in query.scope.items()]
    exhaustive = bool(pairs) and min(_capped_counts_now(db, pairs)) <= EXHAUSTIVE_SCOPE
    expression = match_expression(dict(query.scope), terms, query.query or "")
    if exhaustive:
        sql, params = candidates_sql(query, now, ordered=False, columns=_CANDIDATE_COLUMNS)
        rows = db.execute(sql, [expression, *params, EXHAUSTIVE_SCOPE]).fetchall()
    elif query.tags:
        rows = _best_joined_now(db, query, now, expression, n)
    else:
        rows = _best_now(db, query, now, expression, n)
    return [
        Candidate(int(seq), str(content), (str(created), str(record_id)))
        for seq, content, created, record_id in rows
    ]


def _best_joined_now(
    db: sqlite3.Connection, query: MemorySearchQuery, now: datetime, expression: str, n: int
) -> list[tuple[Any, ...]]:
    """FTS5's best ``n`` matches passing the query's filters, every match joined."""
    # FTS5's best n by seq alone, then their content: SQLite copies every selected
    # column of every match into the sorter, and with the content that cost as much
    # again as FTS5's own bm25() ordering.
    best, params = candidates_sql(query, now, ordered=True, columns="r.seq")
    sql = (
        f"SELECT {_CANDIDATE_COLUMNS} FROM ({best}) AS best "
        "JOIN memory_records AS r ON r.seq = best.seq"
    )
    return db.execute(sql, [expression, *params, n]).fetchall()


def _best_now(
    db: sqlite3.Connection, query: MemorySearchQuery, now: datetime, expression: str, n: int
) -> list[tuple[Any, ...]]:
    """:func:`_best_joined_now`, reading records for FTS5's best matches only.

    Joining every match to its record (for the filters and the tie-break on recency)
    cost as much as FTS5's bm25() itself. ``rank() <= n`` over bm25 alone keeps every
    match scoring at least the n-th best's score, ties included, so when n of those
    pass the filters, they hold the same best n as the full join; only when filters
    drop too many of them (invalidated or expired records) is it asked again.
    """
    where, params = _record_conditions(query, now)
    sql = (
        f"SELECT {_CANDIDATE_COLUMNS}, m.kept FROM ({_RANKED_MATCHES}) AS m "
        f"JOIN memory_records AS r ON r.seq = m.seq "
        f"{'WHERE ' + ' AND '.join(where) if where else ''} "
        "ORDER BY m.score, r.created_at DESC, r.id DESC LIMIT ?"
    )
    rows = db.execute(sql, [expression, n, *params, n]).fetchall()
    if len(rows) == n or (rows and rows[0][-1] < n):
        return [row[:-1] for row in rows]
    return _best_joined_now(db, query, now, expression, n)


async def ranked_search(
    conn: aiosqlite.Connection,
    query: MemorySearchQuery,
    now: datetime,
    statistics: FtsStatistics,
) -> list[MemoryHit]:
    """The hits of a keyword ``query`` (not a listing), ranked by ``rank_records``."""
    ranked = await ranked_rows(conn, query, now, statistics)
    return [MemoryHit(record=record_from_row(row), score=score) for score, row in ranked]


async def ranked_rows(
    conn: aiosqlite.Connection,
    query: MemorySearchQuery,
    now: datetime,
    statistics: FtsStatistics,
) -> list[tuple[float, tuple[Any, ...]]]:
    """:func:`ranked_search` as (score, row): hybrid search builds records only for
    the hits it keeps.

    One hand-off to the connection's thread: the ranking runs there
    (:func:`~recallstore._query.rank_records_now`), reading the candidates as (seq,
    content, recency) only, the document frequencies not cached yet, then the whole
    rows of the hits.
    """
    return await on_thread(conn, ranked_rows_now, query, now, statistics)


def ranked_rows_now(
    db: sqlite3.Connection,
    query: MemorySearchQuery,
    now: datetime,
    statistics: FtsStatistics,
) -> list[tuple[float, tuple[Any, ...]]]:
    """:func:`ranked_rows` on the connection's thread."""

    def fetch(terms: Sequence[QueryTerm], n: int) -> list[Candidate[int]]:
        return _candidates_now(db, query, now, terms, n, statistics)

    def lookup(stems: Sequence[str]) -> CorpusStatistics:
        return statistics.lookup_now(db, stems)

    text = query.query or ""
    ranked = rank_records_now(text, fetch, lookup, query.limit, candidates=RERANK_CANDIDATES)
    if not ranked:
        return []
    rows = _rows_by_seq_now(db, [seq for _, seq in ranked])
    return [(score, rows[seq]) for score, seq in ranked]
