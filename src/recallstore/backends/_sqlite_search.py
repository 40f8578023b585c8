"""The SQLite backend's search: the FTS5 expression and the SELECT for one query.

Scope pairs and tags are index lookups (``memory_scope``, ``memory_tags``). The most
selective one drives the query when it is selective enough; otherwise the query walks
the recency index (or the FTS matches) and checks each filter per row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

import aiosqlite

from recallstore._text import fts5_words, query_terms
from recallstore.backends._sqlite_rows import RECORD_COLUMNS, fetchone
from recallstore.records import MemorySearchQuery, format_timestamp

__all__ = ["DRIVER_CAP", "choose_driver", "filters_of", "fts_expression", "search_sql"]

DRIVER_CAP: Final = 2_000
"""Above this many matching rows a filter is too broad to drive a query from."""

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


def fts_expression(text: str) -> str | None:
    """An FTS5 expression matching any token of ``text``; None when it has no tokens.

    Each token is a quoted string, so no character of user text can act as FTS5 syntax.
    """
    terms = query_terms(text)
    if not terms:
        return None
    # query_terms case-folds and applies NFKD ("Straße" -> "strasse", "ﬁ" -> "fi"), which
    # FTS5's unicode61 does not do to indexed text; also ask for the word as FTS5 folds it.
    variants = dict.fromkeys(terms)
    for word in fts5_words(text):
        variants.setdefault(word)
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in variants)


def filters_of(query: MemorySearchQuery) -> list[Filter]:
    """The query's scope pairs and tags, as index lookups."""
    scope: list[Filter] = [("scope", (key, value)) for key, value in query.scope.items()]
    return scope + [("tag", (tag,)) for tag in query.tags or ()]


async def choose_driver(conn: aiosqlite.Connection, filters: list[Filter]) -> int | None:
    """The most selective filter (capped count), or None when every one is broad.

    The query then starts from that filter's index range and checks the others by
    primary key; when all are broad it walks the recency index (or the FTS matches)
    and checks each filter per row, stopping at the limit.
    """
    if not filters:
        return None
    counts = ", ".join(f"(SELECT count(*) FROM ({_LOOKUP[kind]} LIMIT ?))" for kind, _ in filters)
    params = [value for _, values in filters for value in (*values, DRIVER_CAP)]
    row = await fetchone(conn, f"SELECT {counts}", params)
    assert row is not None
    smallest = min(range(len(filters)), key=lambda index: int(row[index]))
    return smallest if int(row[smallest]) < DRIVER_CAP else None


def search_sql(
    query: MemorySearchQuery,
    expression: str | None,
    now: datetime,
    filters: list[Filter],
    driver: int | None,
) -> tuple[str, list[Any]]:
    """The SELECT for ``query`` (which must not match nothing) and its parameters.

    ``expression`` is the query's FTS5 expression (None for a listing); ``driver``
    indexes the filter to start from (see :func:`choose_driver`).
    """
    where: list[str] = []
    params: list[Any] = []
    for index, (kind, values) in enumerate(filters):
        where.append(f"r.seq IN ({_LOOKUP[kind]})" if index == driver else _CHECK[kind])
        params.extend(values)
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
    if query.is_listing:
        condition = f"WHERE {' AND '.join(where)}" if where else ""
        sql = (
            f"SELECT {RECORD_COLUMNS} FROM memory_records AS r {condition} "
            "ORDER BY r.created_at DESC, r.id DESC LIMIT ?"
        )
        return sql, [*params, query.limit]
    if expression is None:
        raise ValueError("a query without words matches nothing; the store answers it unasked")
    condition = " AND ".join(["memory_fts MATCH ?", *where])
    sql = (
        f"SELECT {RECORD_COLUMNS}, bm25(memory_fts) AS rank_score "
        "FROM memory_fts JOIN memory_records AS r ON r.seq = memory_fts.rowid "
        f"WHERE {condition} ORDER BY rank_score, r.created_at DESC, r.id DESC LIMIT ?"
    )
    return sql, [expression, *params, query.limit]
