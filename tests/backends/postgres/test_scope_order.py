"""Scoped listings by ``memory_scope_order`` (schema version 14, issue 42): the same
records in the same order as the in-memory store, the table kept in step with the
records by every write, delete and forget, and a version-13 store filled on migration."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import psycopg
from tests.backends.postgres.steady import steady

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.postgres import SCHEMA_VERSION, PostgresMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore


def drop_scope_order(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> None:
    """Take schema version 14 back out (its table, triggers and their functions)."""
    conn.execute(f"DROP TABLE {schema}.memory_scope_order")
    for event in ("insert", "delete"):
        conn.execute(f"DROP FUNCTION {schema}.memory_scope_order_{event}() CASCADE")


_INPUTS = [
    MemoryWriteInput(scope=scope, content=f"note {n}", kind=kind, expires_at=expires)
    for n, (scope, kind, expires) in enumerate(
        itertools.product(
            [{"user": "ana"}, {"user": "ana", "session": "s1"}, {"user": "bo"}, {"team": "ana"}],
            ["fact", "episode"],
            [None, datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)],
        )
    )
] * 2

_LISTINGS = [
    MemorySearchQuery(scope={"user": "ana"}, limit=50),
    MemorySearchQuery(scope={"user": "ana"}, limit=3),
    MemorySearchQuery(scope={"user": "ana"}, kinds=["episode"], limit=50),
    MemorySearchQuery(scope={"user": "ana"}, include_invalidated=True, limit=50),
    MemorySearchQuery(scope={"user": "ana"}, include_expired=True, limit=50),
    MemorySearchQuery(scope={"session": "s1"}, limit=50),
    MemorySearchQuery(scope={"user": "ana", "session": "s1"}, limit=50),
    MemorySearchQuery(scope={"user": "nobody"}, limit=50),
    MemorySearchQuery(scope={}, limit=50),
]


async def _listings(store: MemoryStore) -> list[list[str]]:
    return [[hit.record.id for hit in await store.search(query)] for query in _LISTINGS]


async def _fill(store: MemoryStore) -> None:
    written = []
    for start in range(0, len(_INPUTS), 5):
        written += await store.write(_INPUTS[start : start + 5])
    await store.invalidate(written[0].id, "wrong")
    await store.delete(written[1].id)


def _in_step(url: str, schema: str) -> None:
    with psycopg.connect(url) as conn:
        kept = conn.execute(
            f"SELECT pair, at, record_id FROM {schema}.memory_scope_order ORDER BY 1, 2, 3"
        ).fetchall()
        wanted = conn.execute(
            f"SELECT pair, created_at, id FROM {schema}.memory_records, "
            "unnest(tsvector_to_array(search_text)) AS pair WHERE pair LIKE 'scope:%' "
            "ORDER BY 1, 2, 3"
        ).fetchall()
    assert kept == wanted
    assert kept


async def test_scoped_listings_match_the_in_memory_store(
    postgres_url: str, postgres_schema: str
) -> None:
    reference = InMemoryMemoryStore(**steady(3))  # type: ignore[arg-type]
    async with reference:
        await _fill(reference)
        expected = await _listings(reference)
    async with PostgresMemoryStore(
        postgres_url,
        schema=postgres_schema,
        **steady(3),  # type: ignore[arg-type]
    ) as store:
        await _fill(store)
        assert await _listings(store) == expected
    _in_step(postgres_url, postgres_schema)


async def test_the_table_follows_deletes_and_forget(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await _fill(store)
        await store.forget({"user": "bo"})
        (one,) = await store.search(MemorySearchQuery(scope={"team": "ana"}, limit=1))
        await store.delete(one.record.id)
        _in_step(postgres_url, postgres_schema)
        assert await store.search(MemorySearchQuery(scope={"user": "bo"})) == []


async def test_a_version_13_store_fills_the_table_on_migration(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(
        postgres_url,
        schema=postgres_schema,
        **steady(3),  # type: ignore[arg-type]
    ) as store:
        await _fill(store)
        before = await _listings(store)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DELETE FROM {postgres_schema}.schema_migrations WHERE version >= 14")
        drop_scope_order(conn, postgres_schema)
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        assert await _listings(store) == before
        await store.write([MemoryWriteInput(scope={"user": "ana"}, content="newest")])
        (newest,) = await store.search(MemorySearchQuery(scope={"user": "ana"}, limit=1))
    assert newest.record.content == "newest"
    _in_step(postgres_url, postgres_schema)
    with psycopg.connect(postgres_url) as conn:
        (version,) = conn.execute(
            f"SELECT max(version) FROM {postgres_schema}.schema_migrations"
        ).fetchone() or (0,)
    assert version == SCHEMA_VERSION  # 14 and every version after it
