"""Payload edge values on Postgres (issue 31, defect 4): stored as ``json`` (schema
version 7), so 1e16 and 1e308 come back as floats and -0.0 keeps its sign, through a
real export file to and from Postgres; a version-6 schema's jsonb payloads migrate."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.backends.postgres.test_scope_order import drop_scope_order
from tests.store.test_payload_transfer import round_trip_through_a_file

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemoryWriteInput


@pytest.fixture
def second_schema(postgres_url: str, postgres_schema: str) -> Iterator[str]:
    name = f"{postgres_schema}_b"
    yield name
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


async def test_edge_payloads_survive_an_export_file_between_postgres_stores(
    postgres_url: str, postgres_schema: str, second_schema: str, tmp_path: Path
) -> None:
    await round_trip_through_a_file(
        PostgresMemoryStore(postgres_url, schema=postgres_schema),
        PostgresMemoryStore(postgres_url, schema=second_schema),
        tmp_path / "export.jsonl",
    )


async def test_edge_payloads_survive_an_export_file_from_postgres_to_sqlite_and_back(
    postgres_url: str, postgres_schema: str, second_schema: str, tmp_path: Path
) -> None:
    await round_trip_through_a_file(
        PostgresMemoryStore(postgres_url, schema=postgres_schema),
        SqliteMemoryStore(tmp_path / "memory.db"),
        tmp_path / "to-sqlite.jsonl",
    )
    await round_trip_through_a_file(
        SqliteMemoryStore(tmp_path / "other.db"),
        PostgresMemoryStore(postgres_url, schema=second_schema),
        tmp_path / "to-postgres.jsonl",
    )


async def test_a_version_6_schema_keeps_its_payloads_as_json(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        (record,) = await store.write(
            [MemoryWriteInput(scope={}, content="old", payload={"n": 1.5, "t": ["x"]})]
        )
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # Back to version 6: the payload column as jsonb, versions 7, 8 (observed_at),
        # 9 (revisions), 10 (where vectors live), 13 (the ledger), 14 and 15 not applied (15 is a
        # statistics setting, applied again as it is).
        conn.execute(f"DELETE FROM {postgres_schema}.schema_migrations WHERE version >= 7")
        conn.execute(f"ALTER TABLE {postgres_schema}.memory_records DROP COLUMN observed_at")
        conn.execute(f"DROP TABLE {postgres_schema}.memory_revisions")  # version 9
        conn.execute(f"ALTER TABLE {postgres_schema}.memory_embedder DROP COLUMN storage")  # 10
        conn.execute(f"DROP TABLE {postgres_schema}.memory_ledger")  # version 13
        drop_scope_order(conn, postgres_schema)  # version 14
        conn.execute(
            f"ALTER TABLE {postgres_schema}.memory_records ALTER COLUMN payload TYPE jsonb "
            "USING payload::jsonb"
        )
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as again:
        kept = await again.get(record.id)
    assert kept is not None
    assert kept.payload == {"n": 1.5, "t": ["x"]}
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        column = conn.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_schema = %s "
            "AND table_name = 'memory_records' AND column_name = 'payload'",
            (postgres_schema,),
        ).fetchone()
    assert column == ("json",)
