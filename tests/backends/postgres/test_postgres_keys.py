"""Postgres: a version-1 schema gains idempotency keys in place; racing stores keep one."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends.postgres import SCHEMA_VERSION, PostgresMemoryStore
from recallstore.backends.postgres.schema import migrations


def _version_1_schema(postgres_url: str, schema: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(
            f"CREATE TABLE {schema}.schema_migrations "
            "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for statement in migrations(schema)[0]:
            assert isinstance(statement, str)  # version 1 is plain SQL
            conn.execute(statement)
        conn.execute(f"INSERT INTO {schema}.schema_migrations (version) VALUES (1)")
        conn.execute(
            f"INSERT INTO {schema}.memory_records (id, scope, kind, content, created_at, "
            "updated_at, search_text) VALUES ('old1', '{\"user\": \"ana\"}', 'fact', "
            "'Ana keeps bees', now(), now(), to_tsvector('simple', 'ana keeps bees'))"
        )


async def test_a_version_1_schema_gains_keys_in_place(
    postgres_url: str, postgres_schema: str
) -> None:
    _version_1_schema(postgres_url, postgres_schema)
    keyed = MemoryWriteInput(scope={"user": "ana"}, content="Ana keeps wasps", idempotency_key="e")
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        old = await store.get("old1")
        assert old is not None
        assert old.idempotency_key is None
        (first,) = await store.write([keyed])
        (again,) = await store.write([keyed])
        assert again == first
    with psycopg.connect(postgres_url) as conn:
        versions = conn.execute(f"SELECT version FROM {postgres_schema}.schema_migrations")
        assert sorted(row[0] for row in versions) == list(range(1, SCHEMA_VERSION + 1))


@pytest.mark.slow
async def test_racing_stores_keep_one_record_per_key(
    postgres_url: str, postgres_schema: str
) -> None:
    keyed = MemoryWriteInput(scope={"user": "ana"}, content="Ana keeps bees", idempotency_key="e1")
    stores = [PostgresMemoryStore(postgres_url, schema=postgres_schema) for _ in range(4)]
    for store in stores:
        await store.open()
    try:
        results = await asyncio.gather(
            *(store.write([keyed]) for store in stores for _ in range(3))
        )
        assert len({batch[0].id for batch in results}) == 1
        listing = await stores[0].search(MemorySearchQuery(include_invalidated=True))
        assert len(listing) == 1
    finally:
        for store in stores:
            await store.aclose()
