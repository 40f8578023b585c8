"""Issue 31, defect 1 on Postgres: a store open with the old embedder while the reembed
code runs in another process refuses with EmbedderSwitchedError, writes no vector of
the old model, and an opener with the new embedder works (helpers: tests/hybrid)."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from tests.hybrid.test_embedder_switch import (
    check_both_sides,
    run_in_subprocess,
    small_toy,
    write_until,
)

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.testing import ToyEmbedder

REEMBED_POSTGRES = """
import asyncio, sys
from recallstore.backends.postgres import PostgresMemoryStore
from tests.hybrid.test_embedder_switch import small_toy

async def main():
    async with PostgresMemoryStore(sys.argv[1], schema=sys.argv[2]) as store:
        print("embedded", await store.reembed(small_toy(), batch=16), file=sys.stderr)

asyncio.run(main())
"""


@pytest.mark.slow
async def test_postgres_store_open_during_a_reembed_refuses_then_new_opener_works(
    postgres_url: str, postgres_schema: str
) -> None:
    def store_with(embedder: ToyEmbedder) -> PostgresMemoryStore:
        return PostgresMemoryStore(postgres_url, schema=postgres_schema, embedder=embedder)

    async def count() -> int:
        async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as plain:
            return len(await plain.search(MemorySearchQuery(limit=1000, include_expired=True)))

    async with store_with(ToyEmbedder()) as old:
        await old.write([MemoryWriteInput(scope={}, content=f"note {n}") for n in range(200)])
        done = asyncio.Event()
        writer = asyncio.create_task(write_until(old, done))
        try:
            report = await run_in_subprocess("-c", REEMBED_POSTGRES, postgres_url, postgres_schema)
        finally:
            done.set()
        landed, refused = await writer
        assert "embedded" in report
        assert landed > 0
        assert refused >= 1
        with psycopg.connect(postgres_url) as conn:
            lengths = conn.execute(
                f"SELECT DISTINCT array_length(vector, 1) FROM {postgres_schema}.memory_vectors"
            ).fetchall()
            assert lengths == [(64,)]
            records = conn.execute(
                f"SELECT count(*) FROM {postgres_schema}.memory_records"
            ).fetchone()
            vectors = conn.execute(
                f"SELECT count(*) FROM {postgres_schema}.memory_vectors"
            ).fetchone()
            assert records == vectors
        await check_both_sides(old, lambda: store_with(small_toy()), count)
