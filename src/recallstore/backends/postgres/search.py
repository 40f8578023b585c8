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

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from recallstore._search.query import (
    EXHAUSTIVE_SCOPE,
    Candidate,
    CorpusStatistics,
    QueryTerm,
    idf,
    rank_records,
)
from recallstore.backends._time_filters import postgres_time_clauses
from recallstore.backends.postgres.lexemes import MAX_LEXEME_BYTES, scope_lexeme
from recallstore.records import MemorySearchQuery

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresStatistics", "filter_clauses", "ranked_candidates", "scope_tsquery"]


def scope_tsquery(scope: Mapping[str, str]) -> str | None:
    """The tsquery of the records in ``scope`` (its pairs' lexemes, see schema version
    5), or None when the scope is empty or a pair is too long to be indexed."""
    lexemes = [scope_lexeme(key, value) for key, value in scope.items()]
    if not lexemes or None in lexemes:
        return None
    # Lexemes are "scope:", hex digits and "=": quoting cannot be escaped.
    return " & ".join(f"'{lexeme}'" for lexeme in lexemes)


def filter_clauses(
    query: MemorySearchQuery, now: datetime
) -> tuple[list[str], list[Any], str | None]:
    """The WHERE clauses of ``query``'s filters (S7–S9), their parameters, and the
    scope as a tsquery on ``search_text`` (:func:`scope_tsquery`) when it can be one;
    else the scope is a clause (``jsonb @>``) like the other filters."""
    from psycopg.types.json import Jsonb

    where: list[str] = []
    params: list[Any] = []
    in_text = scope_tsquery(query.scope)
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

    async def refresh(self, conn: AsyncConnection[Any]) -> None:
        """Drop the cache when records were added or deleted since it was filled."""
        cursor = await conn.execute(
            f"SELECT documents, tokens, version FROM {self._schema}.memory_totals"
        )
        row = await cursor.fetchone()
        documents, tokens, version = (int(value) for value in row) if row else (0, 0, -1)
        if version != self._version:
            self._version = version
            self._frequency = {}
            self._totals = (documents, tokens / documents if documents else 0.0)

    async def lookup(self, conn: AsyncConnection[Any], stems: Sequence[str]) -> CorpusStatistics:
        """The statistics for ``stems``, from ``memory_stems`` (kept by triggers)."""
        missing = sorted({stem for stem in stems if stem not in self._frequency})
        if missing:
            self._frequency.update(dict.fromkeys(missing, 0))
            cursor = await conn.execute(
                f"SELECT stem, documents FROM {self._schema}.memory_stems WHERE stem = ANY(%s)",
                (missing,),
            )
            for stem, documents in await cursor.fetchall():
                self._frequency[str(stem)] = int(documents)
        return CorpusStatistics(self._totals[0], self._totals[1], self._frequency)


_RECENCY = "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
"""``created_at`` as :func:`~recallstore.records.format_timestamp` writes it, made by
the server: the recency key of each candidate without building a datetime in Python."""


async def ranked_candidates(
    conn: AsyncConnection[Any],
    schema: str,
    query: MemorySearchQuery,
    now: datetime,
    statistics: PostgresStatistics,
) -> list[tuple[float, str]]:
    """(score, id) of a keyword ``query``, best first, at most its limit.

    Candidates are read as (id, content, recency) only: a search scores up to
    :data:`~recallstore._search.query.EXHAUSTIVE_SCOPE` of them, and decoding every
    candidate's JSON columns into a record was most of its time (issue 30). The caller
    reads the winners' rows.
    """
    table = f"{schema}.memory_records"
    where, params, in_scope = filter_clauses(query, now)
    await statistics.refresh(conn)

    async def select(
        terms: Sequence[QueryTerm], stems: list[str], limit: int, *, ordered: bool
    ) -> list[Candidate[str]]:
        condition = " AND ".join(["search_text @@ %s::tsquery", *where])
        order_params: list[Any] = []
        order = ""
        if ordered:
            known = await statistics.lookup(conn, stems)
            frequency, documents = known.document_frequency, known.total_documents
            weights = {t.stem: t.weight * idf(frequency.get(t.stem, 1), documents) for t in terms}
            matched = " + ".join("%s * (search_text @@ %s::tsquery)::int" for _ in stems)
            order = f"ORDER BY {matched} DESC, created_at DESC, id DESC"
            for stem in stems:
                order_params += [weights[stem], _tsquery([stem])]
        cursor = await conn.execute(
            f"SELECT id, content, {_RECENCY} FROM {table} WHERE {condition} {order} LIMIT %s",
            [_matching(stems, in_scope), *params, *order_params, limit],
        )
        return [
            Candidate(str(key), str(content), (str(recency), str(key)))
            for key, content, recency in await cursor.fetchall()
        ]

    async def fetch(terms: Sequence[QueryTerm], n: int) -> list[Candidate[str]]:
        stems = [t.stem for t in terms if len(t.stem.encode()) <= MAX_LEXEME_BYTES]
        if not stems:
            return []
        # Every match when there are few enough (any scope of EXHAUSTIVE_SCOPE records
        # or fewer included, as in the other backends); else the best n.
        every = await select(terms, stems, EXHAUSTIVE_SCOPE + 1, ordered=False)
        if len(every) <= EXHAUSTIVE_SCOPE:
            return every
        return await select(terms, stems, n, ordered=True)

    async def lookup(stems: Sequence[str]) -> CorpusStatistics:
        return await statistics.lookup(conn, stems)

    return await rank_records(query.query or "", fetch, lookup, query.limit)
