"""The Postgres backend's search: filters as SQL, keyword search ranked by ``_search.query``.

``search_text`` holds each record's Porter stems (``array_to_tsvector``, the same
stems every backend indexes) under a GIN index; the store-wide totals BM25 needs sit
in ``memory_totals`` and each stem's record count in ``memory_stems``, both kept by
triggers. Candidates are the records of the filters holding a query stem: every one
when at most :data:`~recallstore._search.query.EXHAUSTIVE_SCOPE` match (so every one within a
scope of that size, as in SQLite and the in-memory store), else the best
:data:`~recallstore._search.query.RERANK_CANDIDATES` by idf-weighted matched stems;
:func:`~recallstore._search.query.rank_records` ranks them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from recallstore._search.query import (
    EXHAUSTIVE_SCOPE,
    Candidate,
    CorpusStatistics,
    QueryTerm,
    idf,
    plan_query,
    rank_records,
)
from recallstore.backends._time_filters import postgres_time_clauses
from recallstore.backends.postgres.lexemes import MAX_LEXEME_BYTES
from recallstore.backends.postgres.rows import COLUMN_NAMES, COLUMNS, TEXT_COLUMNS, record_from_text
from recallstore.backends.postgres.scope_terms import (
    SCOPE_CHECK,
    PairFrequencies,
    ScopeTerms,
    scope_terms,
)
from recallstore.records import MemoryRecord, MemorySearchQuery

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "UNFILTERED_CONDITION",
    "UNFILTERED_WHERE",
    "PostgresStatistics",
    "candidates_sql",
    "filter_clauses",
    "ranked_candidates",
]


def filter_clauses(
    query: MemorySearchQuery, now: datetime, common: PairFrequencies | None = None
) -> tuple[list[str], list[Any], ScopeTerms | None]:
    """The WHERE clauses of ``query``'s filters (S7–S9), their parameters, and the
    scope as ``search_text`` lexemes (``postgres.scope_terms``; ``common``: the scope
    pairs' shares of the rows, which say those checked on the rows) when it can be;
    else the scope is a clause (``jsonb @>``) like the other filters."""
    from psycopg.types.json import Jsonb

    where: list[str] = []
    params: list[Any] = []
    in_text = scope_terms(query.scope, common)
    if query.scope and in_text is None:
        where.append("scope @> %s")
        params.append(Jsonb(query.scope))
    if query.kinds is not None:
        where.append("kind = ANY(%s)")
        params.append(list(query.kinds))
    if query.tags:
        where.append("tags @> %s::text[]")
        params.append(list(query.tags))
    if query.target_key is not None:
        where.append("target->>'key' = %s")
        params.append(query.target_key)
    in_time, time_params = postgres_time_clauses(query, now)
    return where + in_time, params + time_params, in_text


def _tsquery(stems: Sequence[str]) -> str:
    # Stems are runs of letters and digits (see _text), so quoting cannot be escaped.
    return " | ".join(f"'{stem}'" for stem in stems)


def _matching(stems: Sequence[str], in_scope: str | None) -> str:
    """One tsquery for the scope's records holding a stem: GIN intersects the scope
    lexemes' short posting lists with the stems' and skips through the long ones."""
    words = _tsquery(stems)
    return words if in_scope is None else f"{in_scope} & ({words})"


class PostgresStatistics:
    """Store-wide BM25 statistics, cached while ``memory_totals.version`` stays the same
    (every insert and delete statement bumps it, in its own transaction)."""

    def __init__(self, schema: str) -> None:
        self._schema = schema
        self._version: int | None = None
        self._totals = (0, 0.0)
        self._frequency: dict[str, int] = {}

    def receive(self, totals: Sequence[Any] | None, wanted: Sequence[str]) -> None:
        """Take the totals row (documents, tokens, version) read with a search's
        candidates, dropping the cache first when records were added or deleted since it
        was filled; ``wanted`` stems not learned with it are in no record."""
        documents, tokens, version = (int(value) for value in totals) if totals else (0, 0, -1)
        if version != self._version:
            self._version = version
            self._frequency = {}
            self._totals = (documents, tokens / documents if documents else 0.0)
        for stem in wanted:
            self._frequency.setdefault(stem, 0)

    @property
    def version(self) -> int | None:
        """The ``memory_totals.version`` the cache holds counts of; None before any."""
        return self._version

    def learn(self, counts: Mapping[str, int]) -> None:
        """Add stems' record counts read alongside a search's candidates to the cache."""
        self._frequency.update(counts)

    async def lookup(
        self, conn: AsyncConnection[Any], stems: Sequence[str], *, at: int | None = None
    ) -> CorpusStatistics:
        """The statistics for ``stems``, from ``memory_stems`` (kept by triggers). The
        counts the cache lacks are read with the totals' version: unless it is ``at``
        (the version the caller's other counts are of; None takes them as found),
        :class:`StatisticsMoved` is raised, as records were added or deleted since."""
        missing = sorted({stem for stem in stems if stem not in self._frequency})
        if missing:
            cursor = await conn.execute(
                f"SELECT (SELECT version FROM {self._schema}.memory_totals), "
                f"array_agg(stem), array_agg(documents) FROM {self._schema}.memory_stems "
                "WHERE stem = ANY(%s)",
                (missing,),
            )
            version, found, counts = await cursor.fetchone() or (None, None, None)
            if at is not None and version != at:
                raise StatisticsMoved(at, version)
            self._frequency.update(dict.fromkeys(missing, 0))
            self._frequency.update(zip(map(str, found or ()), map(int, counts or ()), strict=True))
        return CorpusStatistics(self._totals[0], self._totals[1], self._frequency)


class StatisticsMoved(Exception):
    """Records were added or deleted between a search's statement and a look-up of
    counts its cache lacked: the search runs again, its counts all of one state."""

    def __init__(self, expected: int, found: int | None) -> None:
        super().__init__(f"memory_totals.version {expected} became {found}")
        self.expected, self.found = expected, found


_RECENCY = "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
"""``created_at`` as :func:`~recallstore.records.format_timestamp` writes it, made by
the server: the recency key of each candidate without building a datetime in Python."""


_MARGIN = 1e-9
"""Relative slack in max-score pruning's comparison, for the server's and Python's
float sums of the same weights added in different orders."""


async def ranked_candidates(
    conn: AsyncConnection[Any],
    schema: str,
    query: MemorySearchQuery,
    now: datetime,
    statistics: PostgresStatistics,
    stored: str | None = None,
    common: PairFrequencies | None = None,
) -> tuple[list[tuple[float, str]], dict[str, Callable[[], MemoryRecord]]]:
    """(score, id) of a keyword ``query``, best first, at most its limit; and what
    builds the record of each candidate read whole (every one, when the filters hold at
    most :data:`~recallstore._search.query.EXHAUSTIVE_SCOPE` matches).

    One statement in the common case (:func:`candidates_sql`): the candidates, the
    counts of the query's stems and of every stem the candidates hold (the feedback
    words'), and the store's totals. Three statements in a pipeline cost about 0.4 ms
    more than one on the same server (psycopg's and the server's work per statement).
    Candidates' JSON columns come as text and are decoded for the winners only: a
    search scores up to EXHAUSTIVE_SCOPE of them, and decoding every candidate into a
    record was most of its time (issue 30). ``stored`` is that statement's call as a
    function of the schema (``postgres.stored``), for a scoped search with no other
    filter (:data:`UNFILTERED_CONDITION`): the same rows, planned once per server
    connection. ``common``: the scope pairs' shares (``postgres.scope_terms``).
    """
    where, params, scope = filter_clauses(query, now, common)
    in_scope = None
    if scope is not None:
        where, params, in_scope = [SCOPE_CHECK, *where], [scope.checked, *params], scope.indexed
    condition = " AND ".join(["search_text @@ %s::tsquery", *where])
    stems = [term.stem for term in plan_query(query.query or "")]
    first = _indexed(stems)
    if not first:
        return [], {}  # no record holds a stem Postgres cannot index
    if stored is None or in_scope is None or condition != UNFILTERED_CONDITION:
        stored = candidates_sql(schema, condition)
    for attempt in range(_ATTEMPTS):
        try:
            last = attempt == _ATTEMPTS - 1
            return await _ranked_once(
                conn, schema, query, statistics, stored, condition, params, in_scope, stems, last
            )
        except StatisticsMoved:
            continue  # a write landed mid-search: once more, the counts of one state
    raise AssertionError("unreachable: the last attempt does not raise StatisticsMoved")


ALWAYS_COUNTED = 64
"""Up to this many candidates, their stems are counted with them whatever the cache
holds: cheaper on the server than the round trip a cache miss costs after."""

_ATTEMPTS = 3
"""How often a search runs when writes keep landing between its statements; the last
attempt takes the counts as it finds them (as a search across a write must)."""


async def _ranked_once(
    conn: AsyncConnection[Any],
    schema: str,
    query: MemorySearchQuery,
    statistics: PostgresStatistics,
    stored: str,
    condition: str,
    params: list[Any],
    in_scope: str | None,
    stems: list[str],
    last: bool,
) -> tuple[list[tuple[float, str]], dict[str, Callable[[], MemoryRecord]]]:
    first = _indexed(stems)
    wanted = sorted(set(stems))
    # The candidates' stems are counted for the feedback words unless the cache holds
    # counts of this very state already (most of a small scope's search, otherwise).
    cached = statistics.version
    cursor = await conn.execute(
        stored,
        [
            _matching(first, in_scope),
            *params,
            EXHAUSTIVE_SCOPE + 1,
            wanted,
            EXHAUSTIVE_SCOPE,
            ALWAYS_COUNTED,
            -1 if cached is None else cached,
        ],
    )
    rows = await cursor.fetchall()
    totals: Sequence[Any] | None = None
    counts: dict[str, int] = {}
    known: dict[str, Callable[[], MemoryRecord]] = {}
    prefetched: list[Candidate[str]] = []
    for row in rows:
        key = row[1]
        if key is None:  # the one row of statistics
            totals = row[_STEMS + 2 :]
            counts = dict(zip(row[_STEMS] or (), row[_STEMS + 1] or (), strict=True))
            continue
        prefetched.append(Candidate(key, row[4], (row[0], key)))
        known[key] = partial(record_from_text, row[1:_STEMS])
    statistics.receive(totals, wanted)  # first: it drops the cache when records changed
    statistics.learn(counts)
    unread = [(first, prefetched)]
    at = None if last else statistics.version
    ranked = await _ranked(conn, schema, condition, params, in_scope, query, statistics, unread, at)
    return ranked, known


def _indexed(stems: Sequence[str]) -> list[str]:
    # A longer stem is in no record's search_text (lexemes.MAX_LEXEME_BYTES).
    return [stem for stem in stems if len(stem.encode()) <= MAX_LEXEME_BYTES]


_STEMS = 1 + len(COLUMN_NAMES)
"""Where a candidate's record columns end in a row of :func:`candidates_sql`, and where
its statistics row holds the stems, then their record counts, documents, tokens and
the totals' version."""


def candidates_sql(schema: str, condition: str) -> str:
    """Up to ``%s`` records of ``condition`` as (recency, TEXT_COLUMNS, NULL…), then one
    row (NULL…, stems, their record counts, documents, tokens, version): the stems of
    ``%s`` (the query's) and, when the records are at most ``%s`` and either at most
    ``%s`` or the totals' version is not ``%s`` (the caller's cached counts'), every
    stem they hold (the feedback words'), with the store's totals. One snapshot for
    all: the counts always match the totals' version. The counts travel as two arrays,
    not a row a stem: a search's answer was half NULLs (four bytes each) of stem rows."""
    nulls = ", ".join(["NULL"] * _STEMS)
    return (
        f"WITH c AS MATERIALIZED (SELECT {_RECENCY} AS recency, {TEXT_COLUMNS}, search_text "
        f"FROM {schema}.memory_records WHERE {condition} LIMIT %s) "
        f"SELECT recency, {COLUMNS}, NULL::text[], NULL::bigint[], NULL::bigint, "
        "NULL::bigint, NULL::bigint FROM c UNION ALL "
        f"SELECT {nulls}, k.stems, k.counts, t.documents, t.tokens, t.version "
        f"FROM {schema}.memory_totals AS t, (SELECT array_agg(stem) AS stems, "
        "array_agg(documents) AS counts FROM ("
        f"SELECT stem, documents FROM {schema}.memory_stems WHERE stem = ANY(%s::text[]) "
        f"UNION ALL SELECT stem, documents FROM {schema}.memory_stems "
        "WHERE (SELECT count(*) FROM c) <= %s AND ((SELECT count(*) FROM c) <= %s "
        f"OR (SELECT version FROM {schema}.memory_totals) <> %s::bigint) "
        "AND stem IN (SELECT unnest(tsvector_to_array(search_text)) FROM c)) AS s) AS k"
    )


UNFILTERED_WHERE, _ = postgres_time_clauses(MemorySearchQuery(), datetime.now(UTC))
"""The clauses of a query with no filter but its scope (none of S7–S9's options); their
one parameter is the time now."""

UNFILTERED_CONDITION = " AND ".join(["search_text @@ %s::tsquery", SCOPE_CHECK, *UNFILTERED_WHERE])
""":data:`UNFILTERED_WHERE` in a scoped keyword search, after its tsquery and the check
of the scope's common pairs."""


async def _ranked(
    conn: AsyncConnection[Any],
    schema: str,
    condition: str,
    params: list[Any],
    in_scope: str | None,
    query: MemorySearchQuery,
    statistics: PostgresStatistics,
    unread: list[tuple[list[str], list[Candidate[str]]]],
    at: int | None,
) -> list[tuple[float, str]]:
    table = f"{schema}.memory_records"

    async def select(stems: list[str], limit: int) -> list[Candidate[str]]:
        """Every record of the filters holding one of ``stems``, up to ``limit``: the
        rows read with the statistics when they are those asked for."""
        if unread and unread[0][0] == stems:
            return unread.pop()[1]
        cursor = await conn.execute(
            f"SELECT id, content, {_RECENCY} FROM {table} WHERE {condition} LIMIT %s",
            [_matching(stems, in_scope), *params, limit],
        )
        return [
            Candidate(str(key), str(content), (str(recency), str(key)))
            for key, content, recency in await cursor.fetchall()
        ]

    async def best(
        weights: Mapping[str, float], among: list[str], n: int
    ) -> tuple[list[Candidate[str]], float]:
        """The ``n`` best records holding one of ``among`` by idf-weighted matched
        stems (every stem of ``weights`` counted), and the last one's weight."""
        matched = " + ".join("%s * (search_text @@ %s::tsquery)::int" for _ in weights)
        order_params: list[Any] = []
        for stem, weight in weights.items():
            order_params += [weight, _tsquery([stem])]
        cursor = await conn.execute(
            f"SELECT id, content, {_RECENCY}, {matched} AS matched FROM {table} "
            f"WHERE {condition} ORDER BY matched DESC, created_at DESC, id DESC LIMIT %s",
            [*order_params, _matching(among, in_scope), *params, n],
        )
        rows = await cursor.fetchall()
        found = [
            Candidate(str(key), str(content), (str(recency), str(key)))
            for key, content, recency, _ in rows
        ]
        return found, float(rows[-1][3]) if rows else 0.0

    async def fetch(terms: Sequence[QueryTerm], n: int) -> list[Candidate[str]]:
        stems = _indexed([t.stem for t in terms])
        if not stems:
            return []
        # Every match when there are few enough (any scope of EXHAUSTIVE_SCOPE records
        # or fewer included, as in the other backends); else the best n.
        every = await select(stems, EXHAUSTIVE_SCOPE + 1)
        if len(every) <= EXHAUSTIVE_SCOPE:
            return every
        known = await statistics.lookup(conn, stems, at=at)
        frequency, documents = known.document_frequency, known.total_documents
        weights = {
            t.stem: t.weight * idf(frequency.get(t.stem, 1), documents)
            for t in terms
            if t.stem in stems
        }
        rare = sorted(stems, key=lambda stem: (-weights[stem], stem))
        # Max-score pruning: read only the records holding the rarest stems, enough of
        # them to fill n; when the n-th of those outweighs every other stem together, no
        # record without a rare stem could have ranked among the n, so the answer is
        # exact, and a common stem's long posting list (a word in a tenth of a
        # million-record store) was never read. Otherwise, every match is ranked.
        holding = 0
        for end, stem in enumerate(rare[:-1], start=1):
            holding += frequency.get(stem, 0)
            if holding >= n:
                found, last = await best(weights, rare[:end], n)
                others = sum(weights[other] for other in rare[end:])
                if len(found) == n and last > others * (1 + _MARGIN) + _MARGIN:
                    return found
                break
        return (await best(weights, stems, n))[0]

    async def lookup(stems: Sequence[str]) -> CorpusStatistics:
        return await statistics.lookup(conn, stems, at=at)

    return await rank_records(query.query or "", fetch, lookup, query.limit)
