"""The SQLite backend's search: listings by recency, keyword search ranked by ``_search.query``.

Listings: scope pairs and tags are index lookups (``memory_scope``, ``memory_tags``).
The narrowest scope pair drives, its records read newest first from its index
(``memory_scope_recency``) until the limit; a much narrower tag drives when it is
selective; otherwise the query walks the recency index and checks each filter per row.

Keyword search (run by ``sqlite.ranked``): FTS5 finds the candidates and
:func:`recallstore._search.query.rank_records_now` ranks them, as in every keyword backend.
Each scope pair is a token of the index's
``scope_terms`` column (see schema version 2), so a scoped search asks FTS5 for
``scope_terms:(pair AND pair) AND content:(word OR word)`` and FTS5 intersects the
doclists: the work follows the scope's records, not the store's (a broad pair beside a
narrow one is checked on the rows instead, ``sqlite.scope_split``). Document
frequencies come from ``memory_terms`` (kept in every write's transaction,
``sqlite.terms``) and the record count and mean length from the index's own totals,
cached until the index changes.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Literal

import aiosqlite

from recallstore._search.porter import porter_stem
from recallstore._search.query import CorpusStatistics, QueryTerm
from recallstore._search.text import fts5_words, tokenize
from recallstore.backends._time_filters import sqlite_time_conditions
from recallstore.backends.sqlite.insert import recency_key, scope_token
from recallstore.backends.sqlite.rows import RECORD_COLUMNS, on_thread
from recallstore.records import MemorySearchQuery

__all__ = [
    "DRIVER_CAP",
    "PORTER_TOKENIZER",
    "SCOPE_CHECK",
    "FtsStatistics",
    "IndexFigures",
    "candidates_sql",
    "choose_driver_now",
    "export_page",
    "filters_of",
    "fts5_totals",
    "listing_rows_now",
    "listing_sql",
    "match_expression",
    "narrowest_count_now",
    "narrowest_within_now",
    "scope_checks",
    "scope_token",
    "words_expression",
]

DRIVER_CAP: Final = 2_000
"""Above this many matching rows a filter is too broad to drive a query from."""

_AVERAGES_ID: Final = 1
_STRUCTURE_ID: Final = 10
_INDEX_VERSION: Final = (
    f"SELECT id, block FROM memory_fts_data WHERE id IN ({_AVERAGES_ID}, {_STRUCTURE_ID})"
)
"""FTS5's averages and structure records (fixed ids in ``<table>_data``)."""
_INDEX_SQL: Final = "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'memory_fts'"

_FIRST_CAP: Final = 32
_CAP_GROWTH: Final = 8
"""The caps :func:`_narrowest_now` counts under: 32, 256, then :data:`DRIVER_CAP`."""

_SORTED_DRIVER_PENALTY: Final = 8
"""How much narrower than a scope pair a tag must be to drive a listing: its rows are
all read and sorted, where the pair's come in order and stop at the limit."""


# A subset filter is a list of index lookups the record must all pass: one per scope
# pair (memory_scope) and one per tag (memory_tags).
Filter = tuple[Literal["scope", "tag"], tuple[str, ...]]
_LOOKUP: Final = {
    "scope": "SELECT record_seq FROM memory_scope WHERE key = ? AND value = ?",
    "tag": "SELECT record_seq FROM memory_tags WHERE tag = ?",
}
SCOPE_CHECK: Final = "EXISTS (SELECT 1 FROM json_each(r.scope) WHERE key = ? AND value = ?)"
"""Record ``r`` has the scope pair (key, value): read from its own scope column, as
``memory_scope`` is ordered by pair, not by record (schema version 7)."""
_CHECK: Final = {
    "scope": SCOPE_CHECK,
    "tag": "EXISTS (SELECT 1 FROM memory_tags WHERE record_seq = r.seq AND tag = ?)",
}


PORTER_TOKENIZER: Final = "porter unicode61 remove_diacritics 2"
"""The only tokenizer whose counting ``sqlite.pruning`` reproduces (the default)."""


class IndexFigures:
    """What FTS5's bm25() reads from the index for every query: the row count, the
    token total of every column (its mean row length), and each phrase's row count."""

    def __init__(self, rows: int, tokens: int, documents: Mapping[str, int]) -> None:
        self.rows = rows
        self.average = float(tokens) / float(rows) if rows else 0.0
        self.documents = documents

    def idf(self, term: str) -> float:
        """FTS5's idf of a term (its floor of 1e-6 included)."""
        hits = self.documents.get(term, 0)
        value = math.log((self.rows - hits + 0.5) / (hits + 0.5))
        return value if value > 0.0 else 1e-6


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
    return words_expression(scope, list(words))


def words_expression(scope: Mapping[str, str], words: Sequence[str]) -> str:
    """The FTS5 expression for records in ``scope`` holding any of ``words``, each a
    quoted string."""
    content = f"content : ({' OR '.join(_quoted(word) for word in words)})"
    if not scope:
        return content
    pairs = " AND ".join(_quoted(scope_token(key, value)) for key, value in scope.items())
    return f"scope_terms : ({pairs}) AND {content}"


def filters_of(query: MemorySearchQuery) -> list[Filter]:
    """The query's scope pairs and tags, as index lookups."""
    scope: list[Filter] = [("scope", (key, value)) for key, value in query.scope.items()]
    return scope + [("tag", (tag,)) for tag in query.tags or ()]


def _capped_counts_now(
    db: sqlite3.Connection, filters: list[Filter], cap: int = DRIVER_CAP
) -> list[int]:
    """Each filter's row count, capped: at ``cap``, then at the smallest so far (a
    filter that reaches it cannot be the smallest), so a broad pair counted after a
    narrow one costs what the narrow one did."""
    counts = []
    for kind, values in filters:
        row = db.execute(f"SELECT count(*) FROM ({_LOOKUP[kind]} LIMIT ?)", (*values, cap))
        count = int(row.fetchone()[0])
        counts.append(count)
        cap = min(cap, count)
    return counts


def _narrowest_now(db: sqlite3.Connection, filters: list[Filter]) -> int:
    """The narrowest filter (the first of equals), as :func:`_capped_counts_now` would
    find it, by counts under a cap that starts small and grows only while every filter
    reaches it: the work follows the narrowest filter's size, not :data:`DRIVER_CAP`
    per broad one (a tenant's pair beside its user's read 2,000 index entries)."""
    narrowest = narrowest_within_now(db, filters, DRIVER_CAP - 1)
    return 0 if narrowest is None else narrowest  # all reach the cap: the first


def narrowest_within_now(db: sqlite3.Connection, filters: list[Filter], limit: int) -> int | None:
    """The narrowest of ``filters`` (the first of equals) when it holds at most ``limit``
    rows, else None; counted under caps that start small and grow only while every
    filter reaches them, so a user's pair beside its tenant's costs what the user's
    records cost."""
    found = narrowest_count_now(db, filters, limit)
    return None if found is None else found[0]


def narrowest_count_now(
    db: sqlite3.Connection, filters: list[Filter], limit: int
) -> tuple[int, int] | None:
    """:func:`narrowest_within_now` with the narrowest filter's row count: (index, count)."""
    if not filters:
        return None
    cap = _FIRST_CAP
    while True:
        counted = min(cap, limit + 1)
        counts = _capped_counts_now(db, filters, counted)
        smallest = min(counts)
        if smallest < counted:
            return counts.index(smallest), smallest
        if counted > limit:
            return None
        cap *= _CAP_GROWTH


def choose_driver_now(db: sqlite3.Connection, filters: list[Filter]) -> int | None:
    """The filter a listing starts from (see :func:`listing_sql`), or None.

    A scope pair's rows come newest first from its index (schema version 5), so a
    listing driven by one reads little more than its limit, however broad the pair:
    the narrowest pair drives. A tag's rows must be sorted, so a tag drives only when
    it is selective and much narrower than every pair. With neither, the query walks
    the recency index, checking each filter per row and stopping at the limit.
    """
    if not filters:
        return None
    if all(kind == "scope" for kind, _ in filters):
        return 0 if len(filters) == 1 else _narrowest_now(db, filters)
    counts = _capped_counts_now(db, filters)
    pairs = [index for index, (kind, _) in enumerate(filters) if kind == "scope"]
    tags = [index for index, (kind, _) in enumerate(filters) if kind == "tag"]
    pair = min(pairs, key=counts.__getitem__) if pairs else None
    tag = min(tags, key=counts.__getitem__) if tags else None
    if tag is None or counts[tag] >= DRIVER_CAP:
        return pair
    return tag if pair is None or counts[tag] * _SORTED_DRIVER_PENALTY < counts[pair] else pair


def _record_conditions(query: MemorySearchQuery, now: datetime) -> tuple[list[str], list[Any]]:
    """The per-row conditions every query applies: kinds, target key, validity, expiry
    and the time filters (``_time_filters``)."""
    where: list[str] = []
    params: list[Any] = []
    if query.kinds is not None:
        kinds = sorted(set(query.kinds))
        where.append(f"r.kind IN ({', '.join('?' * len(kinds))})")
        params.extend(kinds)
    if query.target_key is not None:
        where.append("json_extract(r.target, '$.key') = ?")
        params.append(query.target_key)
    in_time, time_params = sqlite_time_conditions(query, now)
    return where + in_time, params + time_params


_SCOPE_ROW_OBSERVED: Final = "coalesce(d.observed_us, d.created_us)"


def _scope_row_window(query: MemorySearchQuery) -> tuple[list[str], list[int]]:
    """The observed window as conditions on the driving scope row ``d`` (schema version
    9), so a record outside it is skipped without being read; the same conditions on
    ``r`` (``_time_filters``) stay, as for every other path.

    A stored observed time is never after its record's save (NULL otherwise), so no
    record saved before the window starts is in it: ``created_us`` bounds the walk of
    the pair's index, which stops there.
    """
    where: list[str] = []
    params: list[int] = []
    if query.observed_after is not None:
        after = recency_key(query.observed_after)
        where.append(f"d.created_us >= ? AND {_SCOPE_ROW_OBSERVED} >= ?")
        params.extend((after, after))
    if query.observed_before is not None:
        where.append(f"{_SCOPE_ROW_OBSERVED} < ?")
        params.append(recency_key(query.observed_before))
    return where, params


def listing_sql(
    query: MemorySearchQuery, now: datetime, filters: list[Filter], driver: int | None
) -> tuple[str, list[Any]]:
    """The SELECT of a listing (newest first) and its parameters; ``driver`` indexes the
    filter to start from (see :func:`choose_driver_now`)."""
    where: list[str] = []
    params: list[Any] = []
    source = "memory_records AS r"
    order = "r.created_at DESC, r.id DESC"
    for index, (kind, values) in enumerate(filters):
        if index != driver:
            where.append(_CHECK[kind])
            params.extend(values)
        elif kind == "scope":
            # The pair's index yields its records newest first; CROSS JOIN keeps it the
            # outer loop, so reading stops at the limit (ties on the microsecond are
            # put in id order by a sort of just those rows).
            source = "memory_scope AS d CROSS JOIN memory_records AS r ON r.seq = d.record_seq"
            order = "d.created_us DESC, r.id DESC"
            where.append("d.key = ? AND d.value = ?")
            params.extend(values)
            window, window_params = _scope_row_window(query)
            where.extend(window)
            params.extend(window_params)
        else:
            where.append(f"r.seq IN ({_LOOKUP[kind]})")
            params.extend(values)
    more, more_params = _record_conditions(query, now)
    condition = " AND ".join([*where, *more])
    sql = (
        f"SELECT {RECORD_COLUMNS} FROM {source} "
        f"{'WHERE ' + condition if condition else ''} "
        f"ORDER BY {order} LIMIT ?"
    )
    return sql, [*params, *more_params, query.limit]


def listing_rows_now(
    db: sqlite3.Connection, query: MemorySearchQuery, now: datetime
) -> list[tuple[Any, ...]]:
    """A listing's rows, newest first, in one hand-off to the connection's thread."""
    filters = filters_of(query)
    sql, params = listing_sql(query, now, filters, choose_driver_now(db, filters))
    return db.execute(sql, params).fetchall()


class FtsStatistics:
    """Store-wide BM25 statistics, cached per index version: the record count and
    mean length from the FTS5 index's averages record, each stem's record count from
    ``memory_terms`` (schema version 12, ``sqlite.terms``).

    The cache lives as long as the index's averages record (row count, token totals)
    and structure record (whose cookie FTS5 bumps whenever it writes a segment, i.e.
    on every insert, delete or merge, from any connection) stay the same, so a ranking
    never uses figures older than the records it ranks. Writes that leave the index
    alone (the event journal, invalidations) keep the cache. A write that changes the
    index drops it, and the next search reads its stems again, one look-up each in
    its own snapshot: before version 12 they came from an ``fts5vocab`` table, which
    walked each stem's whole doclist, so a user's search after anyone's write paid
    for every record of the store holding its words (issue 38).
    """

    def __init__(self) -> None:
        self._version: tuple[bytes, bytes] | None = None
        self._totals = (0, 0.0)
        self._all_tokens = 0
        self._frequency: dict[str, int] = {}
        self._porter: bool | None = None

    async def refresh(self, conn: aiosqlite.Connection) -> None:
        """Drop the cache when the index changed since it was filled."""
        await on_thread(conn, self.refresh_now)

    def refresh_now(self, db: sqlite3.Connection) -> None:
        """:meth:`refresh` on the connection's thread."""
        blocks = dict(db.execute(_INDEX_VERSION).fetchall())
        averages = bytes(blocks.get(_AVERAGES_ID, b""))
        version = (averages, bytes(blocks.get(_STRUCTURE_ID, b"")))
        if version == self._version:
            return
        self._version = version
        self._frequency = {}
        rows, tokens = fts5_totals(averages)
        self._totals = (rows, tokens[0] / rows if rows and tokens else 0.0)
        self._all_tokens = sum(tokens)
        if self._porter is None:
            row = db.execute(_INDEX_SQL).fetchone()
            self._porter = row is not None and PORTER_TOKENIZER in str(row[0])

    def figures_now(self, db: sqlite3.Connection, stems: Sequence[str]) -> IndexFigures | None:
        """What FTS5's bm25() reads for ``stems`` (``sqlite.pruning``), after
        :meth:`refresh_now`; None when the index's tokenizer is not the default one,
        whose counting the pruning reproduces."""
        if not self._porter:
            return None
        self.count_now(db, stems)
        return IndexFigures(self._totals[0], self._all_tokens, self._frequency)

    async def lookup(self, conn: aiosqlite.Connection, stems: Sequence[str]) -> CorpusStatistics:
        """The statistics for ``stems`` (document frequencies in the content column)."""
        if any(stem not in self._frequency for stem in stems):
            await on_thread(conn, self.count_now, stems)
        return CorpusStatistics(self._totals[0], self._totals[1], self._frequency)

    def lookup_now(self, db: sqlite3.Connection, stems: Sequence[str]) -> CorpusStatistics:
        """:meth:`lookup` on the connection's thread."""
        self.count_now(db, stems)
        return CorpusStatistics(self._totals[0], self._totals[1], self._frequency)

    def count_now(self, db: sqlite3.Connection, stems: Sequence[str]) -> None:
        """Read the document frequencies of ``stems`` not cached yet, on the
        connection's thread."""
        missing = sorted({stem for stem in stems if stem not in self._frequency})
        if not missing:
            return
        self._frequency.update(dict.fromkeys(missing, 0))
        marks = ", ".join("?" * len(missing))
        rows = db.execute(
            f"SELECT term, docs FROM memory_terms WHERE term IN ({marks})", missing
        ).fetchall()
        for term, documents in rows:
            self._frequency[str(term)] = int(documents)


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
    query: MemorySearchQuery,
    now: datetime,
    *,
    ordered: bool,
    columns: str = RECORD_COLUMNS,
    checked: Sequence[tuple[str, str]] = (),
) -> tuple[str, list[Any]]:
    """The SELECT of a keyword query's candidates and its parameters after the FTS5
    expression (the first) and before the row limit (the last).

    Scope pairs are part of the expression (see :func:`match_expression`) but for
    ``checked`` ones (``sqlite.scope_split``); those, tags, kinds, validity and expiry
    are checked per match. ``ordered`` asks for FTS5's own best
    first (``bm25()`` over the content column; equal scores last written first, by
    seq, which FTS5 orders without reading the records), else every match in index
    order.
    ``columns`` of ``memory_records AS r`` (every record column unless given).
    """
    tags = [tag for tag in query.tags or ()]
    where, params = _record_conditions(query, now)
    pairs, pair_params = scope_checks(checked)
    condition = " AND ".join(["memory_fts MATCH ?", *pairs, *(_CHECK["tag"] for _ in tags), *where])
    order = "ORDER BY bm25(memory_fts, 1.0, 0.0), r.seq DESC" if ordered else ""
    sql = (
        f"SELECT {columns} FROM memory_fts "
        "JOIN memory_records AS r ON r.seq = memory_fts.rowid "
        f"WHERE {condition} {order} LIMIT ?"
    )
    return sql, [*pair_params, *tags, *params]


def scope_checks(checked: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """``checked`` scope pairs as conditions on record ``r``, and their parameters."""
    return [SCOPE_CHECK] * len(checked), [part for pair in checked for part in pair]


async def export_page(
    conn: aiosqlite.Connection,
    scope: Mapping[str, str],
    after: tuple[str, str] | None,
    size: int,
) -> list[Any]:
    """Up to ``size`` rows of ``scope`` after the key ``(created_at, id)``, in key order."""
    conditions = [SCOPE_CHECK] * len(scope)
    params: list[Any] = [part for pair in scope.items() for part in pair]
    if after is not None:
        conditions.append("(r.created_at, r.id) > (?, ?)")
        params.extend(after)
    where = " AND ".join(conditions) or "1"
    async with conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memory_records r WHERE {where} "
        "ORDER BY r.created_at, r.id LIMIT ?",
        [*params, size],
    ) as cursor:
        return list(await cursor.fetchall())
