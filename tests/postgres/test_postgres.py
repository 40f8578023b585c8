"""Postgres-specific behaviour the conformance kit does not cover: schema versioning,
connection failures, and the GIN indexes behind scope and text filters."""

from __future__ import annotations

import psycopg
import pytest

from recallstore import (
    MemorySearchQuery,
    MemoryWriteInput,
    StoreIncompatibleError,
    StoreUnavailableError,
)
from recallstore.backends.postgres import SCHEMA_VERSION, PostgresMemoryStore
from recallstore.errors import ConfigurationError


async def test_newer_schema_is_refused_and_left_untouched(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write([MemoryWriteInput(scope={"user": "u1"}, content="keeps bees")])
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {postgres_schema}.schema_migrations (version) VALUES (99)")
        before = conn.execute(f"SELECT * FROM {postgres_schema}.memory_records").fetchall()

    with pytest.raises(StoreIncompatibleError) as caught:
        async with PostgresMemoryStore(postgres_url, schema=postgres_schema):
            pass

    assert (caught.value.found_version, caught.value.supported_version) == (99, SCHEMA_VERSION)
    assert "99" in str(caught.value)
    assert str(SCHEMA_VERSION) in str(caught.value)
    with psycopg.connect(postgres_url) as conn:
        after = conn.execute(f"SELECT * FROM {postgres_schema}.memory_records").fetchall()
    assert after == before


async def test_migrations_are_recorded_once(postgres_url: str, postgres_schema: str) -> None:
    for _ in range(2):
        async with PostgresMemoryStore(postgres_url, schema=postgres_schema):
            pass
    with psycopg.connect(postgres_url) as conn:
        versions = conn.execute(
            f"SELECT version FROM {postgres_schema}.schema_migrations ORDER BY version"
        ).fetchall()
    assert versions == [(version,) for version in range(1, SCHEMA_VERSION + 1)]


async def test_unreachable_server_is_an_error_naming_the_target_without_password() -> None:
    store = PostgresMemoryStore("postgresql://someone:s3cret@127.0.0.1:1/nowhere")
    with pytest.raises(StoreUnavailableError) as caught:
        await store.open()
    assert "s3cret" not in str(caught.value)
    assert "127.0.0.1:1/nowhere" in str(caught.value)


def test_schema_name_must_be_a_plain_identifier() -> None:
    with pytest.raises(ConfigurationError, match="schema"):
        PostgresMemoryStore("postgresql://localhost/x", schema="x; DROP TABLE y")


async def test_scope_and_text_filters_can_use_the_gin_indexes(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write(
            [MemoryWriteInput(scope={"tenant": "acme", "user": "u1"}, content="likes tea")]
        )
        hits = await store.search(MemorySearchQuery(query="tea", scope={"tenant": "acme"}))
        assert [hit.record.content for hit in hits] == ["likes tea"]
    table = f"{postgres_schema}.memory_records"
    with psycopg.connect(postgres_url) as conn:
        conn.execute("SET enable_seqscan = off")
        scope_plan = conn.execute(
            f"EXPLAIN SELECT id FROM {table} WHERE scope @> %s::jsonb", ('{"tenant": "acme"}',)
        ).fetchall()
        text_plan = conn.execute(
            f"EXPLAIN SELECT id FROM {table} WHERE search_text @@ "
            f"to_tsquery('{postgres_schema}.memory_text'::regconfig, %s)",
            ("'tea'",),
        ).fetchall()
    assert "memory_records_scope" in " ".join(line for (line,) in scope_plan)
    assert "memory_records_text" in " ".join(line for (line,) in text_plan)
