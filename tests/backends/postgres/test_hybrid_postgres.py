"""The Postgres backend with an embedder: the hybrid sub-suite and the rules it keeps,
and the embedder check on reopening (the array-column path; pgvector is not used)."""

from __future__ import annotations

import pytest
from tests.hybrid.test_hybrid_conformance import HybridKit

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.errors import EmbedderMismatchError
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.testing import StoreFactory, ToyEmbedder


class TestPostgresHybrid(HybridKit):
    @pytest.fixture
    def store_factory(self, postgres_url: str, postgres_schema: str) -> StoreFactory:
        return lambda: PostgresMemoryStore(
            postgres_url, schema=postgres_schema, embedder=ToyEmbedder()
        )


async def test_postgres_refuses_another_embedder(postgres_url: str, postgres_schema: str) -> None:
    async with PostgresMemoryStore(
        postgres_url, schema=postgres_schema, embedder=ToyEmbedder()
    ) as store:
        await store.write([MemoryWriteInput(scope={}, content="a job at the clinic")])
    other = PostgresMemoryStore(
        postgres_url, schema=postgres_schema, embedder=ToyEmbedder(dimension=64, name="other")
    )
    with pytest.raises(EmbedderMismatchError) as caught:
        await other.open()
    assert caught.value.stored == ("recallstore-toy-512", 512)
    assert caught.value.given == ("other-64", 64)


async def test_postgres_reembed_switches_the_embedder(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(
        postgres_url, schema=postgres_schema, embedder=ToyEmbedder()
    ) as store:
        await store.write([MemoryWriteInput(scope={}, content="a job at the clinic")])
    small = ToyEmbedder(dimension=64, name="small")
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as plain:
        assert await plain.reembed(small) == 1
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema, embedder=small) as store:
        hits = await store.search(MemorySearchQuery(query="where does she work"))
        assert [hit.record.content for hit in hits] == ["a job at the clinic"]


async def test_postgres_takes_the_default_embedder_by_its_word(
    postgres_url: str, postgres_schema: str
) -> None:
    pytest.importorskip("onnxruntime", reason="the default embedder needs the semantic extra")
    scope = {"user": "ana"}
    async with PostgresMemoryStore(
        postgres_url, schema=postgres_schema, embedder="default"
    ) as store:
        await store.write(
            [
                MemoryWriteInput(scope=scope, content="Works as a nurse."),
                MemoryWriteInput(scope=scope, content="Allergic to peanuts."),
            ]
        )
        hits = await store.search(
            MemorySearchQuery(query="Is satay sauce safe for me?", scope=scope, limit=1)
        )
    assert [hit.record.content for hit in hits] == ["Allergic to peanuts."]
    with pytest.raises(EmbedderMismatchError):
        await PostgresMemoryStore(
            postgres_url, schema=postgres_schema, embedder=ToyEmbedder()
        ).open()
