"""``PostgresMemoryStore.store_id``: the same for every opening of one schema, another for
another schema, and nothing of the URL or the schema's name in it."""

from __future__ import annotations

import uuid

import psycopg

from recallstore import PostgresMemoryStore


async def test_the_store_id_names_one_schema_across_openings(
    postgres_url: str, postgres_schema: str
) -> None:
    other_schema = f"t_{uuid.uuid4().hex[:16]}"
    ids = []
    try:
        for schema in (postgres_schema, postgres_schema, other_schema):
            async with PostgresMemoryStore(postgres_url, schema=schema) as store:
                ids.append(store.store_id)
    finally:
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA IF EXISTS {other_schema} CASCADE")
    first, again, other = ids
    assert first is not None
    assert len(first) == 32
    assert first == again
    assert other is not None
    assert other != first
    assert postgres_schema not in first
