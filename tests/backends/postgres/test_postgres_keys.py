"""Postgres: a version-1 schema gains idempotency keys in place; racing stores keep one;
a call that loses the race for a key on the unique index runs again (``postgres.keys``)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from recallstore import MemoryConflictError, MemorySearchQuery, MemoryWriteInput
from recallstore.backends.postgres import SCHEMA_VERSION, PostgresMemoryStore
from recallstore.backends.postgres.schema import migrations
from recallstore.store import RecordChange


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


async def _waiting_on_a_lock(postgres_url: str, app: str) -> None:
    """Return once a connection named ``app`` waits for a lock (bounded: 60 s)."""
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as watcher:
        for _ in range(600):
            cursor = await watcher.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE application_name = %s AND wait_event_type = 'Lock'",
                (app,),
            )
            if (await cursor.fetchone()) == (1,):
                return
            await asyncio.sleep(0.1)
    raise AssertionError(f"no connection of {app} ever waited for a lock")


@contextmanager
def _made_valid_uncommitted(postgres_url: str, schema: str, record_id: str) -> Iterator[Any]:
    """A transaction of another writer that makes ``record_id`` valid again, committed
    when the block ends: its key is taken, and no lock on the key says so."""
    with psycopg.connect(postgres_url) as conn:
        conn.execute(
            f"UPDATE {schema}.memory_records SET invalid_at = NULL, invalid_reason = NULL "
            "WHERE id = %s",
            (record_id,),
        )
        yield conn
        conn.commit()


async def test_a_write_that_loses_the_race_for_its_key_returns_the_winners_record(
    postgres_url: str, postgres_schema: str
) -> None:
    app = f"recallstore-race-{uuid.uuid4().hex[:8]}"
    keyed = MemoryWriteInput(scope={"user": "ana"}, content="Ana keeps bees", idempotency_key="k")
    dsn = make_conninfo(postgres_url, application_name=app)
    async with PostgresMemoryStore(dsn, schema=postgres_schema) as store:
        (old,) = await store.write([keyed])
        await store.invalidate(old.id, "freed the key")
        with _made_valid_uncommitted(postgres_url, postgres_schema, old.id):
            # The write finds the key free and waits on the unique index for the other
            # writer, which then commits: the write runs again and finds the holder.
            racing = asyncio.ensure_future(store.write([keyed]))
            await _waiting_on_a_lock(postgres_url, app)
        (returned,) = await racing
        changed = MemoryWriteInput(
            scope={"user": "ana"}, content="Ana keeps wasps", idempotency_key="k"
        )
        await store.invalidate(old.id, "freed the key again")
        with _made_valid_uncommitted(postgres_url, postgres_schema, old.id):
            racing = asyncio.ensure_future(store.write([changed]))
            await _waiting_on_a_lock(postgres_url, app)
        (successor,) = await racing
        replaced = await store.get(old.id)
    assert returned.id == old.id
    assert replaced is not None
    assert replaced.superseded_by == successor.id


async def test_a_revert_that_loses_the_race_for_a_key_is_refused_as_held(
    postgres_url: str, postgres_schema: str
) -> None:
    app = f"recallstore-race-{uuid.uuid4().hex[:8]}"
    ana = {"user": "ana"}
    dsn = make_conninfo(postgres_url, application_name=app)
    async with PostgresMemoryStore(dsn, schema=postgres_schema) as store:
        (first,) = await store.write(
            [MemoryWriteInput(scope=ana, content="Ana keeps bees", idempotency_key="k")]
        )
        await store.revise("rev-1", ana, [RecordChange(first.id, "merged")], "{}")
        (second,) = await store.write(
            [MemoryWriteInput(scope=ana, content="Ana keeps wasps", idempotency_key="k")]
        )
        await store.invalidate(second.id, "freed the key")
        with _made_valid_uncommitted(postgres_url, postgres_schema, second.id):
            racing = asyncio.ensure_future(store.revert_revision("rev-1"))
            await _waiting_on_a_lock(postgres_url, app)
        with pytest.raises(MemoryConflictError, match="held by"):
            await racing
        kept = await store.get(first.id)
    assert kept is not None
    assert kept.invalid_at is not None
