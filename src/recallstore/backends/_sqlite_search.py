"""The SQLite backend's search: listings by recency, keyword search ranked by ``_query``.

Listings: scope pairs and tags are index lookups (``memory_scope``, ``memory_tags``).
The most selective one drives the query when it is selective enough; otherwise the
query walks the recency index and checks each filter per row.

Keyword search: FTS5 finds the candidates and :func:`recallstore._query.rank_records`
ranks them, as in every keyword backend. Each scope pair is a token of the index's
``scope_terms`` column (see schema version 2), so a scoped search asks FTS5 for
``scope_terms:(pair AND pair) AND content:(word OR word)`` and FTS5 intersects the
doclists: the work follows the scope's records, not the store's. Document
frequencies come from an ``fts5vocab`` table and the record count and mean length
from the index's own totals, cached until the file changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, Literal

import aiosqlite

from recallstore._porter import porter_stem
from recallstore._query import (
    EXHAUSTIVE_SCOPE,
    RERANK_CANDIDATES,
    Candidate,
    CorpusStatistics,
    QueryTerm,
    rank_records,
)
from recallstore._text import fts5_words, tokenize
from recallstore.backends._sqlite_rows import (
    COLUMN_NAMES,
    RECORD_COLUMNS,
    fetchone,
    record_from_row,
)
from recallstore.records import MemoryHit, MemorySearchQuery, format_timestamp

__all__ = [
    "DRIVER_CAP",
    "FtsStatistics",
    "candidates_sql",
    "choose_driver",
    "filters_of",
    "fts5_totals",
    "listing_sql",
    "match_expression",
    "ranked_rows",
    "ranked_search",
    "scope_token",
]

DRIVER_CAP: Final = 2_000
"""Above this many matching rows a filter is too broad to drive a query from."""

_ID, _CONTENT, _CREATED = (COLUMN_NAMES.index(name) for name in ("id", "content", "created_at"))

# A subset filter is a list of index lookups the record must all pass: one per scope
# pair (memory_scope) and one per tag (memory_tags).
Filter = tuple[Literal["scope", "tag"], tuple[str, ...]]
_LOOKUP: Final = {
    "scope": "SELECT record_seq FROM memory_scope WHERE key = ? AND value = ?",
    "tag": "SELECT record_seq FROM memory_tags WHERE tag = ?",
}
_CHECK: Final = {
    "scope": (
        "EXISTS (SELECT 1 FROM memory_scope WHERE record_seq = r.seq AND key = ? AND value = ?)"
    ),
    "tag": "EXISTS (SELECT 1 FROM memory_tags WHERE record_seq = r.seq AND tag = ?)",
}


def scope_token(key: str, value: str) -> str:
    """The ``scope_terms`` token of one scope pair, as schema version 2's triggers
    write it: hex of the UTF-8 key, ``x``, hex of the value, ``0``."""
    return f"{key.encode().hex()}x{value.encode().hex()}0"


def _quoted(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def match_expression(scope: dict[str, str], terms: Sequence[QueryTerm], text: str) -> str:
    """The FTS5 expression for records in ``scope`` holding any of ``terms``.

    Every token is a quoted string, so no character of user text acts as FTS5 syntax.
    ``text`` is the query as typed: _text's folding applies NFKD ("Straße" becomes
    "strasse"), which FTS5's unicode61 does not do to indexed text, so a word of the
    query is also asked for as FTS5 folds it.
    """
    stems = {term.stem for term in terms}
    words = dict.fromkeys(term.word for term in terms)
    for word in fts5_words(text):
        if word not in words and any(porter_stem(part) in stems for part in tokenize(word)):
            words[word] = None
    content = f"content : ({' OR '.join(_quoted(word) for word in words)})"
    if not scope:
        return content
    pairs = " AND ".join(_quoted(scope_token(key, value)) for key, value in scope.items())
    return f"scope_terms : ({pairs}) AND {content}"


def filters_of(query: MemorySearchQuery) -> list[Filter]:
    """The query's scope pairs and tags, as index lookups."""
    scope: list[Filter] = [("scope", (key, value)) for key, value in query.scope.items()]
    return scope + [("tag", (tag,)) for tag in query.tags or ()]


async def _capped_counts(conn: aiosqlite.Connection, filters: list[Filter]) -> list[int]:
    counts = ", ".join(f"(SELECT count(*) FROM ({_LOOKUP[kind]} LIMIT ?))" for kind, _ in filters)
    params = [value for _, values in filters for value in (*values, DRIVER_CAP)]
    row = await fetchone(conn, f"SELECT {counts}", params)
    assert row is not None
    return [int(count) for count in row]


async def choose_driver(conn: aiosqlite.Connection, filters: list[Filter]) -> int | None:
    """The most selective filter (capped count), or None when every one is broad.

    The query then starts from that filter's index range and checks the others by
    primary key; when all are broad it walks the recency index and checks each filter
    per row, stopping at the limit.
    """
    if not filters:
        return None
    counts = await _capped_counts(conn, filters)
    smallest = min(range(len(filters)), key=counts.__getitem__)
    return smallest if counts[smallest] < DRIVER_CAP else None


def _record_conditions(query: MemorySearchQuery, now: datetime) -> tuple[list[str], list[Any]]:
    """The per-row conditions every query applies: kinds, validity and expiry."""
    where: list[str] = []
    params: list[Any] = []
    if query.kinds is not None:
        kinds = sorted(set(query.kinds))
        where.append(f"r.kind IN ({', '.join('?' * len(kinds))})")
        params.extend(kinds)
    if query.target_key is not None:
        where.append("json_extract(r.target, '$.key') = ?")
        params.append(query.target_key)
    if not query.include_invalidated:
        where.append("r.invalid_at IS NULL")
    if not query.include_expired:
        where.append("(r.expires_at IS NULL OR r.expires_at > ?)")
        params.append(format_timestamp(now))
    return where, params


def listing_sql(
    query: MemorySearchQuery, now: datetime, filters: list[Filter], driver: int | None
) -> tuple[str, list[Any]]:
    """The SELECT of a listing (newest first) and its parameters; ``driver`` indexes the
    filter to start from (see :func:`choose_driver`)."""
    where: list[str] = []
    params: list[Any] = []
    for index, (kind, values) in enumerate(filters):
        where.append(f"r.seq IN ({_LOOKUP[kind]})" if index == driver else _CHECK[kind])
        params.extend(values)
    more, more_params = _record_conditions(query, now)
    condition = " AND ".join([*where, *more])
    sql = (
        f"SELECT {RECORD_COLUMNS} FROM memory_records AS r "
        f"{'WHERE ' + condition if condition else ''} "
        "ORDER BY r.created_at DESC, r.id DESC LIMIT ?"
    )
    return sql, [*params, *more_params, query.limit]


class FtsStatistics:
    """Store-wide BM25 statistics read from the FTS5 index, cached per file version.

    The cache lives as long as neither this connection (``total_changes``) nor another
    (``PRAGMA data_version``) has changed the file, so a ranking never uses figures
    older than the records it ranks.
    """

    def __init__(self) -> None:
        self._version: tuple[int, int] | None = None
        self._totals = (0, 0.0)
        self._frequency: dict[str, int] = {}

    async def refresh(self, conn: aiosqlite.Connection) -> None:
        """Drop the cache when the file changed since it was filled."""
        row = await fetchone(conn, "PRAGMA data_version")
        version = (int(row[0]) if row is not None else 0, conn.total_changes)
        if version == self._version:
            return
        self._version = version
        self._frequency = {}
        block_row = await fetchone(conn, "SELECT block FROM memory_fts_data WHERE id = 1")
        rows, tokens = fts5_totals(bytes(block_row[0]) if block_row is not None else b"")
        self._totals = (rows, tokens[0] / rows if rows and tokens else 0.0)

    async def lookup(self, conn: aiosqlite.Connection, stems: Sequence[str]) -> CorpusStatistics:
        """The statistics for ``stems`` (document frequencies in the content column)."""
        missing = sorted({stem for stem in stems if stem not in self._frequency})
        if missing:
            self._frequency.update(dict.fromkeys(missing, 0))
            marks = ", ".join("?" * len(missing))
            async with conn.execute(
                "SELECT term, doc FROM memory_fts_vocab "
                f"WHERE term IN ({marks}) AND col = 'content'",
                missing,
            ) as cursor:
                for term, documents in await cursor.fetchall():
                    self._frequency[str(term)] = int(documents)
        return CorpusStatistics(self._totals[0], self._totals[1], self._frequency)


def fts5_totals(block: bytes) -> tuple[int, list[int]]:
    """(rows, tokens per column) from an FTS5 averages record (``<table>_data`` id 1:
    SQLite varints, the row count then each column's token total, kept current by
    FTS5 on every insert and delete)."""
    values, offset = [], 0
    while offset < len(block):
        value = 0
        for position in range(9):
            byte = block[offset]
            offset += 1
            if position == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return (values[0], values[1:]) if values else (0, [])


def candidates_sql(
    query: MemorySearchQuery, now: datetime, *, ordered: bool
) -> tuple[str, list[Any]]:
    """The SELECT of a keyword query's candidates and its parameters after the FTS5
    expression (the first) and before the row limit (the last).

    Scope pairs are part of the expression (see :func:`match_expression`); tags, kinds,
    validity and expiry are checked per match. ``ordered`` asks for FTS5's own best
    first (``bm25()`` over the content column), else every match in index order.
    """
    tags = [tag for tag in query.tags or ()]
    where, params = _record_conditions(query, now)
    condition = " AND ".join(["memory_fts MATCH ?", *(_CHECK["tag"] for _ in tags), *where])
    order = "ORDER BY bm25(memory_fts, 1.0, 0.0), r.created_at DESC, r.id DESC" if ordered else ""
    sql = (
        f"SELECT {RECORD_COLUMNS} FROM memory_fts "
        "JOIN memory_records AS r ON r.seq = memory_fts.rowid "
        f"WHERE {condition} {order} LIMIT ?"
    )
    return sql, [*tags, *params]


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
    the hits it keeps."""
    text = query.query or ""
    scope = dict(query.scope)
    exhaustive = False
    if scope:
        pairs: list[Filter] = [("scope", pair) for pair in scope.items()]
        exhaustive = min(await _capped_counts(conn, pairs)) <= EXHAUSTIVE_SCOPE
    sql, params = candidates_sql(query, now, ordered=not exhaustive)
    await statistics.refresh(conn)

    async def fetch(terms: Sequence[QueryTerm], n: int) -> list[Candidate[tuple[Any, ...]]]:
        expression = match_expression(scope, terms, text)
        limit = EXHAUSTIVE_SCOPE if exhaustive else n
        rows = await conn.execute_fetchall(sql, [expression, *params, limit])
        return [
            Candidate(tuple(row), str(row[_CONTENT]), (str(row[_CREATED]), str(row[_ID])))
            for row in rows
        ]

    async def lookup(stems: Sequence[str]) -> CorpusStatistics:
        return await statistics.lookup(conn, stems)

    return await rank_records(text, fetch, lookup, query.limit, candidates=RERANK_CANDIDATES)
