"""The pgvector-backed store behind PgBouncer in transaction pooling mode: the whole
conformance kit with an embedder (vectors in a ``vector(d)`` column under HNSW) and the
hybrid kit, through a PgBouncer in front of the pgvector server (tests/postgres_server.py:
two server connections, so a store's transactions keep changing server connections).
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from tests.hybrid.test_hybrid_conformance import HybridKit

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore
from recallstore.testing import (
    ClockedStoreFactory,
    MemoryStoreConformance,
    StoreFactory,
    ToyEmbedder,
)


def pooled(url: str, schema: str, **options: object) -> PostgresMemoryStore:
    return PostgresMemoryStore(
        url,
        schema=schema,
        pool_mode="transaction",
        embedder=ToyEmbedder(),
        **options,  # type: ignore[arg-type]
    )


async def test_vectors_live_in_pgvector_through_the_pooler(
    pgvector_pgbouncer_url: str, pgvector_url: str, pgvector_schema: str
) -> None:
    async with pooled(pgvector_pgbouncer_url, pgvector_schema) as store:
        assert store.vector_storage == "pgvector"
        written = await store.write(
            [MemoryWriteInput(scope={"user": "u"}, content=f"note {n} about tea") for n in range(5)]
        )
        hits = await store.search(MemorySearchQuery(query="tea", scope={"user": "u"}, limit=5))
    assert {hit.record.id for hit in hits} == {record.id for record in written}
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        embeddings = conn.execute(f"SELECT count(*) FROM {pgvector_schema}.memory_embeddings")
        arrays = conn.execute(f"SELECT count(*) FROM {pgvector_schema}.memory_vectors")
        assert (embeddings.fetchone(), arrays.fetchone()) == ((5,), (0,))


class TestPgBouncerPgvectorConformance(MemoryStoreConformance):
    """Every capability, vectors in pgvector, through the pooler."""

    @pytest.fixture
    def store_factory(
        self, pgvector_pgbouncer_url: str, pgvector_schema: str
    ) -> Callable[[], MemoryStore]:
        return lambda: pooled(pgvector_pgbouncer_url, pgvector_schema)

    @pytest.fixture
    def clocked_store_factory(
        self, pgvector_pgbouncer_url: str, pgvector_schema: str
    ) -> ClockedStoreFactory:
        return lambda clock: pooled(pgvector_pgbouncer_url, pgvector_schema, clock=clock)


class TestPgBouncerPgvectorHybrid(HybridKit):
    @pytest.fixture
    def store_factory(self, pgvector_pgbouncer_url: str, pgvector_schema: str) -> StoreFactory:
        return lambda: pooled(pgvector_pgbouncer_url, pgvector_schema)
