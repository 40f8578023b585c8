"""The Postgres backend behind PgBouncer in transaction pooling mode (tests/postgres_server.py
starts one for the session, with fewer server connections than a store's pool, so a
store's transactions keep changing server connections).

The whole conformance kit runs through it, keyword and hybrid, and the journal's kit
with a tailer that polls (no listen URL) and one that ``LISTEN``s on a direct URL.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import quote

import psycopg
import pytest

from recallstore import load_memory_store
from recallstore.backends.journal import JournalEntry
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.postgres.connections import split_url
from recallstore.backends.postgres.journal import JournalListener, JournalPoller
from recallstore.errors import ConfigurationError, StoreUnavailableError
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore
from recallstore.testing import ClockedStoreFactory, MemoryStoreConformance, ToyEmbedder
from recallstore.testing._harness import StoreFactory
from recallstore.testing.journal import JournalConformance

SCOPE = {"user": "u_1"}


def pooled(url: str, schema: str, **options: object) -> PostgresMemoryStore:
    return PostgresMemoryStore(url, schema=schema, pool_mode="transaction", **options)  # type: ignore[arg-type]


def test_the_pooler_is_pgbouncer_in_transaction_mode(pgbouncer_url: str) -> None:
    admin = pgbouncer_url.rsplit("/", 1)[0] + "/pgbouncer"
    with psycopg.connect(admin, autocommit=True, prepare_threshold=None) as conn:
        rows = conn.execute("SHOW CONFIG").fetchall()
    settings = {row[0]: row[1] for row in rows}
    assert settings["pool_mode"] == "transaction"
    assert int(settings["default_pool_size"]) < 8  # fewer than a store's pool holds


def test_a_session_prepared_statement_does_not_survive_the_pooler(pgbouncer_url: str) -> None:
    # What psycopg does by default after five runs of a statement: two clients name
    # their prepared statement alike, and the pooler gives both the same server session.
    with (
        psycopg.connect(pgbouncer_url, autocommit=True, prepare_threshold=0) as first,
        psycopg.connect(pgbouncer_url, autocommit=True, prepare_threshold=0) as second,
    ):
        first.execute("SELECT %s::int", (1,))
        with pytest.raises(psycopg.errors.DuplicatePreparedStatement):
            second.execute("SELECT %s::int", (2,))


async def test_a_store_not_told_of_the_pooler_says_what_to_do(
    pgbouncer_url: str, postgres_schema: str
) -> None:
    # Opening runs statements often enough for psycopg to prepare them (or the calls do).
    store = PostgresMemoryStore(pgbouncer_url, schema=postgres_schema, max_connections=2)

    async def use() -> None:
        async with store:
            [record] = await store.write([MemoryWriteInput(scope=SCOPE, content="a fact")])
            for _ in range(40):
                await asyncio.gather(store.get(record.id), store.get(record.id))

    with pytest.raises(StoreUnavailableError, match="pool_mode='transaction'"):
        await use()


class TestPgBouncerConformance(MemoryStoreConformance):
    @pytest.fixture
    def store_factory(self, pgbouncer_url: str, postgres_schema: str) -> Callable[[], MemoryStore]:
        return lambda: pooled(pgbouncer_url, postgres_schema)

    @pytest.fixture
    def clocked_store_factory(
        self, pgbouncer_url: str, postgres_schema: str
    ) -> ClockedStoreFactory:
        return lambda clock: pooled(pgbouncer_url, postgres_schema, clock=clock)


class TestPgBouncerHybridConformance(MemoryStoreConformance):
    """Every capability: the same kit with an embedder (hybrid search, vectors)."""

    @pytest.fixture
    def store_factory(self, pgbouncer_url: str, postgres_schema: str) -> Callable[[], MemoryStore]:
        return lambda: pooled(pgbouncer_url, postgres_schema, embedder=ToyEmbedder())

    @pytest.fixture
    def clocked_store_factory(
        self, pgbouncer_url: str, postgres_schema: str
    ) -> ClockedStoreFactory:
        return lambda clock: pooled(
            pgbouncer_url, postgres_schema, clock=clock, embedder=ToyEmbedder()
        )


class TestPgBouncerPollingJournalKit(JournalConformance):
    """No listen URL: a tailer reads the journal table every half second."""

    @pytest.fixture
    def store_factory(self, pgbouncer_url: str, postgres_schema: str) -> StoreFactory:
        return lambda: pooled(pgbouncer_url, postgres_schema)


class TestPgBouncerListeningJournalKit(JournalConformance):
    """A direct listen URL: a tailer is woken by ``NOTIFY`` sent through the pooler."""

    @pytest.fixture
    def store_factory(
        self, pgbouncer_url: str, postgres_url: str, postgres_schema: str
    ) -> StoreFactory:
        return lambda: pooled(pgbouncer_url, postgres_schema, listen_url=postgres_url)


async def _followed_write(tailer: PostgresMemoryStore, writer: PostgresMemoryStore) -> JournalEntry:
    """The entry a tailer following from the newest id gets for the writer's next write."""
    _, newest = await tailer.journal_bounds()
    ready = asyncio.Event()

    async def follow() -> JournalEntry:
        following = tailer.follow_journal(newest)
        first = asyncio.ensure_future(anext(following))
        ready.set()
        return await first

    task = asyncio.create_task(follow())
    await ready.wait()
    await writer.write([MemoryWriteInput(scope=SCOPE, content="wakes the tailer")])
    return await asyncio.wait_for(task, timeout=60)


@pytest.mark.parametrize("listening", [False, True], ids=["polling", "listen-url"])
async def test_a_tailer_behind_the_pooler_sees_another_process_write(
    pgbouncer_url: str, postgres_url: str, postgres_schema: str, listening: bool
) -> None:
    listen = postgres_url if listening else None
    async with (
        pooled(pgbouncer_url, postgres_schema, listen_url=listen) as tailer,
        pooled(pgbouncer_url, postgres_schema) as writer,
    ):
        assert isinstance(tailer._listener, JournalListener if listening else JournalPoller)
        await writer.write([MemoryWriteInput(scope=SCOPE, content="before the tailer")])
        entry = await _followed_write(tailer, writer)
    assert entry.type == "agent.memory.write"
    assert entry.envelope["data"]["operation"] == "write"


def test_the_url_names_the_pool_mode_and_the_listen_url() -> None:
    listen = "postgresql://app:secret@db:5432/app"
    url = (
        "postgresql://app@bouncer:6432/app?sslmode=disable&recallstore_pool_mode=transaction"
        f"&recallstore_listen_url={quote(listen, safe='')}"
    )
    assert split_url(url) == (
        "postgresql://app@bouncer:6432/app?sslmode=disable",
        "transaction",
        listen,
        None,
    )
    assert split_url("postgresql://app@db/app") == (
        "postgresql://app@db/app",
        "session",
        None,
        None,
    )
    standby = "postgresql://app@standby/app"
    assert split_url(f"postgresql://app@db/app?recallstore_standby_url={quote(standby)}") == (
        "postgresql://app@db/app",
        "session",
        None,
        standby,
    )
    with pytest.raises(ConfigurationError, match="pool_mode must be 'session' or 'transaction'"):
        split_url("postgresql://app@db/app?recallstore_pool_mode=statement")
    with pytest.raises(ConfigurationError, match="pool_mode"):
        PostgresMemoryStore("postgresql://app@db/app", pool_mode="statement")  # type: ignore[arg-type]


@pytest.fixture
def scratch_database(postgres_url: str) -> Iterator[str]:
    """A database of its own (``load_memory_store`` opens schema ``recallstore``),
    dropped after the test, with any connection the pooler still holds to it."""
    name = f"rs_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield name
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _in(url: str, database: str) -> str:
    return url.rsplit("/", 1)[0] + "/" + database


async def test_load_memory_store_opens_a_pooled_store_from_its_url(
    pgbouncer_url: str, postgres_url: str, scratch_database: str
) -> None:
    direct = _in(postgres_url, scratch_database)
    url = f"{_in(pgbouncer_url, scratch_database)}?recallstore_pool_mode=transaction"
    store = load_memory_store(url)
    assert isinstance(store, PostgresMemoryStore)
    assert isinstance(store._listener, JournalPoller)
    listening = load_memory_store(f"{url}&recallstore_listen_url={quote(direct, safe='')}")
    assert isinstance(listening, PostgresMemoryStore)
    assert isinstance(listening._listener, JournalListener)
    async with listening:
        await listening.write([MemoryWriteInput(scope=SCOPE, content="through the pooler")])
        hits = await listening.search(MemorySearchQuery(query="pooler", scope=SCOPE))
    assert [hit.record.content for hit in hits] == ["through the pooler"]
