"""The Postgres backend's search: filters as SQL, keyword search ranked by ``_query``.

``search_text`` holds each record's Porter stems (``array_to_tsvector``, the same
stems every backend indexes) under a GIN index; the store-wide totals BM25 needs sit
in ``memory_totals``, kept by triggers. Candidates are the records of the filters
holding a query stem: every one when the scope has at most
:data:`~recallstore._query.EXHAUSTIVE_SCOPE` records (as in SQLite and
the in-memory store), else the best :data:`~recallstore._query.RERANK_CANDIDATES` by
idf-weighted matched terms; :func:`~recallstore._query.rank_records` ranks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from recallstore._query import (
    EXHAUSTIVE_SCOPE,
    Candidate,
    CorpusStatistics,
    QueryTerm,
    idf,
    rank_records,
)
from recallstore.backends._postgres_schema import MAX_LEXEME_BYTES
from recallstore.records import MemorySearchQuery, format_timestamp

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresStatistics", "filter_clauses", "ranked_candidates"]


def filter_clauses(query: MemorySearchQuery, now: datetime) -> tuple[list[str], list[Any]]:
    """The WHERE clauses of ``query``'s filters (S7–S9) and their parameters."""
    from psycopg.types.json import Jsonb

    where: list[str] = []
    params: list[Any] = []
    if query.scope:
        where.append("scope @> %s")
        params.append(Jsonb(query.scope))
    if query.kinds is not None:
        where.append("kind = ANY(%s)")
        params.append(list(query.kinds))
    if query.tags:
        where.append("tags @> %s::text[]")
        params.append(list(query.tags))
    if not query.include_invalidated:
        where.append("invalid_at IS NULL")
    if not query.include_expired:
        where.append("(expires_at IS NULL OR expires_at > %s)")
        params.append(now)
    return where, params


def _tsquery(stems: Sequence[str]) -> str:
    # Stems are runs of letters and digits (see _text), so quoting cannot be escaped.
    return " | ".join(f"'{stem}'" for stem in stems)


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
        """The statistics for ``stems``: one GIN count per stem not yet cached."""
        missing = sorted({stem for stem in stems if stem not in self._frequency})
        storable = [stem for stem in missing if len(stem.encode()) <= MAX_LEXEME_BYTES]
        self._frequency.update(dict.fromkeys(missing, 0))
        if storable:
            counts = ", ".join(
                f"(SELECT count(*) FROM {self._schema}.memory_records "
                "WHERE search_text @@ %s::tsquery)"
                for _ in storable
            )
            cursor = await conn.execute(f"SELECT {counts}", [_tsquery([s]) for s in storable])
            row = await cursor.fetchone()
            assert row is not None
            self._frequency.update(zip(storable, (int(n) for n in row), strict=True))
        return CorpusStatistics(self._totals[0], self._totals[1], self._frequency)


async def ranked_candidates(
    conn: AsyncConnection[Any],
    schema: str,
    columns: str,
    query: MemorySearchQuery,
    now: datetime,
    statistics: PostgresStatistics,
) -> list[tuple[float, tuple[Any, ...]]]:
    """(score, row of ``columns``) of a keyword ``query``, best first, at most its limit.

    ``columns`` must start with ``id`` and hold ``content`` and ``created_at``.
    """
    from psycopg.types.json import Jsonb

    table = f"{schema}.memory_records"
    names = [name.strip() for name in columns.split(",")]
    at_id, at_content, at_created = (names.index(n) for n in ("id", "content", "created_at"))
    where, params = filter_clauses(query, now)
    exhaustive = False
    if query.scope:
        cursor = await conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE scope @> %s LIMIT %s) AS s",
            (Jsonb(query.scope), EXHAUSTIVE_SCOPE + 1),
        )
        row = await cursor.fetchone()
        exhaustive = row is not None and int(row[0]) <= EXHAUSTIVE_SCOPE
    await statistics.refresh(conn)

    async def fetch(terms: Sequence[QueryTerm], n: int) -> list[Candidate[tuple[Any, ...]]]:
        stems = [t.stem for t in terms if len(t.stem.encode()) <= MAX_LEXEME_BYTES]
        if not stems:
            return []
        condition = " AND ".join(["search_text @@ %s::tsquery", *where])
        order_params: list[Any] = []
        order = ""
        if not exhaustive:
            known = await statistics.lookup(conn, stems)
            weights = {
                t.stem: t.weight
                * idf(known.document_frequency.get(t.stem, 1), known.total_documents)
                for t in terms
            }
            order = (
                "ORDER BY "
                + " + ".join("%s * (search_text @@ %s::tsquery)::int" for _ in stems)
                + " DESC, created_at DESC, id DESC"
            )
            for stem in stems:
                order_params += [weights[stem], _tsquery([stem])]
        cursor = await conn.execute(
            f"SELECT {columns} FROM {table} WHERE {condition} {order} LIMIT %s",
            [_tsquery(stems), *params, *order_params, EXHAUSTIVE_SCOPE if exhaustive else n],
        )
        found = [
            Candidate(
                tuple(row), str(row[at_content]), (format_timestamp(row[at_created]), row[at_id])
            )
            for row in await cursor.fetchall()
        ]
        return found

    async def lookup(stems: Sequence[str]) -> CorpusStatistics:
        return await statistics.lookup(conn, stems)

    return await rank_records(query.query or "", fetch, lookup, query.limit)
