"""The Postgres store's searches and listings (``PostgresReads``): a keyword ranking in
one statement (``postgres.search``), a hybrid search's two halves at once, a one-pair
listing newest first by ``memory_scope_order``, each run where reads run — the hot
standby when it can serve it (``postgres.routing``), else the primary."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from recallstore._concurrently import both
from recallstore.backends._hybrid import FUSION_DEPTH, HybridSearch, hits_of
from recallstore.backends._vectors import Matrix
from recallstore.backends.postgres import vectors
from recallstore.backends.postgres.pgvector import VectorStorage
from recallstore.backends.postgres.routing import StandbyReads
from recallstore.backends.postgres.rows import TEXT_COLUMNS, record_from_text
from recallstore.backends.postgres.scope_order import scoped_listing_sql
from recallstore.backends.postgres.scope_terms import SCOPE_CHECK, CommonPairs
from recallstore.backends.postgres.search import (
    UNFILTERED_WHERE,
    PostgresStatistics,
    filter_clauses,
    ranked_candidates,
)
from recallstore.backends.postgres.stored import CANDIDATES, LISTING, StoredStatement
from recallstore.records import MemoryHit, MemoryRecord, MemorySearchQuery

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresReads"]

_T = TypeVar("_T")
_Candidates = tuple[list[tuple[float, str]], dict[str, Callable[[], MemoryRecord]]]
"""A keyword ranking as (score, id), and what builds each record read with it."""


class PostgresReads(HybridSearch["AsyncConnection[Any]"]):
    """The search and listing primitives of ``PostgresMemoryStore``."""

    _schema: str
    _table: str
    _statistics: PostgresStatistics
    _common: CommonPairs
    _stored: dict[str, str]  # postgres.stored's calls by name, read at open
    _standby: StandbyReads | None
    _vector_storage: VectorStorage | None

    async def _search_read(self, work: Callable[[AsyncConnection[Any]], Awaitable[_T]]) -> _T:
        """``work(conn)`` where a search or listing runs: the standby when it can, the
        primary when it cannot or fails the read part-way (postgres.routing)."""
        if self._standby is None:
            async with self._reading() as conn:
                return await work(conn)
        self._check_open()
        return await self._standby.read(self._reading, work)

    async def _search(
        self, query: MemorySearchQuery, terms: Sequence[str], now: datetime
    ) -> list[MemoryHit]:
        """Filter (S7–S9), then rank (``postgres.search``) or list by recency (S10–S12)."""
        if self._common.due:  # which scope pairs are common, again (postgres.scope_terms)
            async with self._reading() as conn:
                await self._common.read(conn)
        if not query.is_listing:
            if self._embedder is not None:
                return await self._hybrid_at_once(query, now)

            async def ranked_hits(conn: AsyncConnection[Any]) -> list[MemoryHit]:
                ranked, known = await self._keyword_candidates(conn, query, now)
                missing = [key for _, key in ranked if key not in known]
                fetched = await self._fetch_records(conn, missing) if missing else {}
                return hits_of(ranked, known, fetched)

            return await self._search_read(ranked_hits)
        where, params, scope = filter_clauses(query, now, self._common.frequencies)
        pair = scope.single if scope is not None else None
        if scope is not None and pair is not None:  # newest first by a btree (scope_order)
            stored_call = self._stored_call(LISTING) if where == UNFILTERED_WHERE else None
            where, params = [SCOPE_CHECK, *where], [pair, scope.checked, *params]
            sql = stored_call or scoped_listing_sql(self._schema, where)
        else:
            if scope is not None:
                where = ["search_text @@ %s::tsquery", SCOPE_CHECK, *where]
                params = [scope.indexed, scope.checked, *params]
            sql = (
                f"SELECT {TEXT_COLUMNS} FROM {self._table} "
                f"WHERE {' AND '.join(where) or 'TRUE'} "
                "ORDER BY created_at DESC, id DESC LIMIT %s"
            )

        async def listed(conn: AsyncConnection[Any]) -> list[Any]:
            cursor = await conn.execute(sql, [*params, query.limit])
            return await cursor.fetchall()

        rows = await self._search_read(listed)
        return [MemoryHit.trusted({"record": record_from_text(row), "score": None}) for row in rows]

    async def _keyword_candidates(
        self, conn: AsyncConnection[Any], query: MemorySearchQuery, now: datetime
    ) -> _Candidates:
        stored = self._stored_call(CANDIDATES)
        return await ranked_candidates(
            conn, self._schema, query, now, self._statistics, stored, self._common.frequencies
        )

    async def _hybrid_at_once(self, query: MemorySearchQuery, now: datetime) -> list[MemoryHit]:
        """A hybrid search whose halves overlap: the keyword ranking runs on one
        connection while the query is embedded and its nearest records are found on
        another, so a search waits for the longer of the two, not for their sum."""

        async def keyword() -> _Candidates:
            fusion = self._fusion_query(query)
            return await self._search_read(lambda conn: self._keyword_candidates(conn, fusion, now))

        async def nearest() -> tuple[Matrix, list[tuple[float, str]]]:
            vector = await self._embed_query(query.query or "")
            return vector, await self._nearest(query, vector, max(query.limit, FUSION_DEPTH), now)

        (ranked, known), (vector, found) = await both(keyword(), nearest())
        return await self._hybrid_search(query, ranked, known, vector, now, nearest=found)

    def _stored_call(self, statement: StoredStatement) -> str | None:
        return self._stored.get(statement.name)

    async def _nearest(
        self, query: MemorySearchQuery, vector: Matrix, n: int, now: datetime
    ) -> list[tuple[float, str]]:
        async with self._reading() as conn:
            return await vectors.nearest_ids(
                conn,
                self._schema,
                query,
                vector,
                n,
                now,
                self._vector_check,
                self._vector_storage,
                self._common.frequencies,
            )
