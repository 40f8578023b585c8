"""Statements kept as functions (schema version 16, issue 42, ``postgres.stored``): the
same hits, ids and scores, with them as without them; scoped searches and one-pair
listings call them; a schema without the current functions (a version-15 store, or a
statement changed since) is searched by the statements themselves, and migration
creates the functions."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import psycopg
from psycopg import sql
from tests.backends.postgres.steady import steady

from recallstore.backends.postgres import SCHEMA_VERSION, PostgresMemoryStore
from recallstore.backends.postgres.stored import CANDIDATES, LISTING, STATEMENTS
from recallstore.records import MemorySearchQuery, MemoryWriteInput

_WORDS = ["garden", "tomato", "rain", "bike", "repair", "coffee", "morning", "paris", "train"]


def _inputs() -> list[MemoryWriteInput]:
    scopes = [{"user": "ana"}, {"user": "ana", "session": "s1"}, {"user": "bo"}, {"team": "x"}]
    expired = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)
    return [
        MemoryWriteInput(
            scope=scopes[n % len(scopes)],
            content=" ".join(_WORDS[(n * k) % len(_WORDS)] for k in range(1, 2 + n % 5)),
            kind="fact" if n % 3 else "episode",
            expires_at=expired if n % 11 == 0 else None,
        )
        for n in range(1, 120)
    ]


_QUERIES = [
    MemorySearchQuery(query="garden tomato", scope={"user": "ana"}, limit=10),
    MemorySearchQuery(query="rain", scope={"user": "ana", "session": "s1"}, limit=5),
    MemorySearchQuery(query="coffee paris train", scope={"team": "x"}, limit=50),
    MemorySearchQuery(query="bikes repaired", scope={"user": "bo"}, limit=3),
    MemorySearchQuery(query="nothing matches", scope={"user": "ana"}, limit=10),
    # Not the function's: other filters, or no scope.
    MemorySearchQuery(query="garden", scope={"user": "ana"}, kinds=["episode"], limit=10),
    MemorySearchQuery(query="garden", scope={"user": "ana"}, include_expired=True, limit=10),
    MemorySearchQuery(query="morning coffee", limit=10),
    # One-pair listings are LISTING's when they have no other filter.
    MemorySearchQuery(scope={"user": "ana"}, limit=10),
    MemorySearchQuery(scope={"team": "x"}, limit=50),
    MemorySearchQuery(scope={"user": "nobody"}, limit=5),
    MemorySearchQuery(scope={"user": "ana"}, kinds=["fact"], limit=10),
    MemorySearchQuery(scope={"user": "ana", "session": "s1"}, limit=10),
]
_CALLED = {CANDIDATES.name: 5, LISTING.name: 3}
"""How many of :data:`_QUERIES` call each function: the first five, and the three
unfiltered one-pair listings."""


async def _hits(store: PostgresMemoryStore) -> list[list[tuple[str, float | None]]]:
    return [[(hit.record.id, hit.score) for hit in await store.search(query)] for query in _QUERIES]


def _stored(store: PostgresMemoryStore) -> set[str]:
    return set(store._stored)  # what open found


def _reader(url: str, schema: str) -> PostgresMemoryStore:
    """A store reading ``schema`` at one instant, after every write (some records expired)."""
    return PostgresMemoryStore(url, schema=schema, clock=lambda: datetime(2026, 1, 2, tzinfo=UTC))


async def _filled(url: str, schema: str) -> list[list[tuple[str, float | None]]]:
    """The hits of every query after writing the records, searched by the function."""
    async with PostgresMemoryStore(url, schema=schema, **steady(2)) as store:  # type: ignore[arg-type]
        written = await store.write(_inputs())
        await store.invalidate(written[0].id, "wrong")
    async with _reader(url, schema) as store:
        assert _stored(store) == {statement.name for statement in STATEMENTS}
        return await _hits(store)


async def test_searches_and_listings_are_the_same_with_and_without_the_functions(
    postgres_url: str, postgres_schema: str
) -> None:
    with_function = await _filled(postgres_url, postgres_schema)
    assert sum(map(len, with_function)) > 20
    async with _reader(postgres_url, postgres_schema) as store:
        store._stored = {}  # the statements themselves
        assert await _hits(store) == with_function


async def test_scoped_searches_and_listings_call_the_functions(
    postgres_url: str, postgres_schema: str
) -> None:
    await _filled(postgres_url, postgres_schema)
    counted = f"{postgres_url}?options=-c%20track_functions%3Dpl"
    async with PostgresMemoryStore(counted, schema=postgres_schema) as store:
        await _hits(store)
    # A server process reports its function counts when its client has gone.
    deadline = time.monotonic() + 60
    calls: dict[str, int] = {}
    while calls != _CALLED and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        with psycopg.connect(postgres_url) as conn:
            rows = conn.execute(
                "SELECT funcname, calls FROM pg_stat_user_functions WHERE schemaname = %s",
                (postgres_schema,),
            ).fetchall()
        calls = {str(name): int(count) for name, count in rows}
    assert calls == _CALLED


def _drop_functions(url: str, schema: str, *, version: bool) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        if version:
            conn.execute(f"DELETE FROM {schema}.schema_migrations WHERE version >= 16")
        for statement in STATEMENTS:
            conn.execute(sql.SQL("DROP FUNCTION {}").format(sql.SQL(statement.signature(schema))))


async def test_a_schema_without_the_current_functions_is_searched_by_the_statements(
    postgres_url: str, postgres_schema: str
) -> None:
    before = await _filled(postgres_url, postgres_schema)
    _drop_functions(postgres_url, postgres_schema, version=False)  # statements changed since
    async with _reader(postgres_url, postgres_schema) as store:
        assert _stored(store) == set()
        assert await _hits(store) == before


async def test_a_version_15_store_gets_the_functions_on_migration(
    postgres_url: str, postgres_schema: str
) -> None:
    before = await _filled(postgres_url, postgres_schema)
    _drop_functions(postgres_url, postgres_schema, version=True)
    async with _reader(postgres_url, postgres_schema) as store:
        assert _stored(store) == {statement.name for statement in STATEMENTS}
        assert await _hits(store) == before
    with psycopg.connect(postgres_url) as conn:
        (version,) = conn.execute(
            f"SELECT max(version) FROM {postgres_schema}.schema_migrations"
        ).fetchone() or (0,)
    assert version == SCHEMA_VERSION  # 16 and every version after it
