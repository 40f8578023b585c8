"""Read routing on a real streaming replica (tests/postgres_replica.py starts a primary
and a ``pg_basebackup`` hot standby of it): a save then a search in the same
conversation finds the save, under another writer's load, with reads shed to the
standby and counted; a standby that cannot catch up is passed over for the primary."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from tests.postgres_replica import replica_pair, replica_schema

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput

__all__ = ["replica_pair", "replica_schema"]

TRIALS = 1_000


@pytest.fixture
def schema(replica_schema: str) -> str:
    return replica_schema


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_a_save_then_a_search_in_one_conversation_finds_it_on_the_standby(
    replica_pair: tuple[str, str], schema: str
) -> None:
    primary, standby = replica_pair
    async with (
        PostgresMemoryStore(primary, schema=schema, standby_url=standby) as store,
        PostgresMemoryStore(primary, schema=schema) as other,
    ):
        stop = asyncio.Event()

        async def load() -> int:
            written = 0
            while not stop.is_set():
                batch = [
                    MemoryWriteInput(scope={"user": "load"}, content=f"load note {written + n}")
                    for n in range(20)
                ]
                await other.write(batch)
                written += len(batch)
            return written

        loader = asyncio.create_task(load())
        found = 0
        try:
            for trial in range(TRIALS):
                scope = {"user": f"u{trial % 7}", "conversation": f"c{trial % 13}"}
                word = f"marker{trial}x"
                await store.write([MemoryWriteInput(scope=scope, content=f"said {word} today")])
                hits = await store.search(MemorySearchQuery(query=word, scope=scope))
                found += [hit.record.content for hit in hits] == [f"said {word} today"]
        finally:
            stop.set()
            loaded = await loader
        routing = store.read_routing
    assert found == TRIALS
    assert loaded > 0
    assert routing["standby"] + routing["primary"] == TRIALS
    assert routing["standby"] > 0  # reads shed from the primary, counted
    print(f"read routing over {TRIALS} trials under {loaded} other writes: {routing}")


async def test_a_standby_that_cannot_catch_up_is_passed_over_for_the_primary(
    replica_pair: tuple[str, str], schema: str
) -> None:
    primary, standby = replica_pair
    async with PostgresMemoryStore(
        primary, schema=schema, standby_url=standby, standby_wait=0.05
    ) as store:
        scope = {"user": "u1"}
        await store.write([MemoryWriteInput(scope=scope, content="before the interruption")])
        await _replayed(primary, standby)  # not the 0.05 s wait's to cover on a busy machine
        assert [h.record.content for h in await store.search(MemorySearchQuery(scope=scope))] == [
            "before the interruption"
        ]
        assert store.read_routing == {"standby": 1, "primary": 0}
        with psycopg.connect(standby, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
            try:
                await store.write([MemoryWriteInput(scope=scope, content="while halted")])
                hits = await store.search(MemorySearchQuery(query="halted", scope=scope))
                assert [hit.record.content for hit in hits] == ["while halted"]
                assert store.read_routing == {"standby": 1, "primary": 1}
                # The paused standby really lacks it: read there, it would be missed.
                with psycopg.connect(standby) as look:
                    row = look.execute(
                        f"SELECT count(*) FROM {schema}.memory_records "
                        "WHERE content = 'while halted'"
                    ).fetchone()
                assert row == (0,)
            finally:
                conn.execute("SELECT pg_wal_replay_resume()")


async def test_searches_cancelled_while_the_standby_replays_give_its_connections_back(
    replica_pair: tuple[str, str], schema: str
) -> None:
    primary, standby = replica_pair
    scope = {"user": "u1"}
    async with PostgresMemoryStore(
        primary, schema=schema, standby_url=standby, max_connections=2, standby_wait=30
    ) as store:
        with psycopg.connect(standby, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
            try:
                await store.write([MemoryWriteInput(scope=scope, content="written while paused")])
                # More searches than the standby's pool holds, each cancelled while it
                # waits for the standby to replay the write.
                for _ in range(3):
                    waiting = asyncio.ensure_future(store.search(MemorySearchQuery(scope=scope)))
                    await asyncio.sleep(0.3)
                    assert not waiting.done()
                    waiting.cancel()
                    with pytest.raises(asyncio.CancelledError):
                        await waiting
            finally:
                conn.execute("SELECT pg_wal_replay_resume()")
        # Had a cancelled search kept its connection, this one would find the pool
        # empty and, after waiting, read the primary.
        hits = await store.search(MemorySearchQuery(scope=scope))
        assert [hit.record.content for hit in hits] == ["written while paused"]
        assert store.read_routing == {"standby": 1, "primary": 0}


async def test_a_standby_is_read_only_once_it_has_the_schema_the_store_migrated(
    replica_pair: tuple[str, str], schema: str
) -> None:
    primary, standby = replica_pair
    with psycopg.connect(standby, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        try:
            async with PostgresMemoryStore(
                primary, schema=schema, standby_url=standby, standby_wait=0.05
            ) as store:
                scope = {"user": "u1"}
                assert await store.search(MemorySearchQuery(query="anything", scope=scope)) == []
                assert await store.search(MemorySearchQuery(scope=scope)) == []
                assert store.read_routing == {"standby": 0, "primary": 2}
                with psycopg.connect(standby) as look:  # read there, both would have failed
                    row = look.execute("SELECT to_regnamespace(%s)", (schema,)).fetchone()
                assert row == (None,)
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")
    # Replay of what piled up while paused may take longer than the default wait on a
    # busy machine: a bound far past it, so a read on the primary means the standby
    # never caught up, not that it was slow.
    async with PostgresMemoryStore(
        primary, schema=schema, standby_url=standby, standby_wait=30
    ) as store:
        assert await store.search(MemorySearchQuery(query="anything", scope=scope)) == []
        assert store.read_routing == {"standby": 1, "primary": 0}


async def test_a_url_names_the_standby(replica_pair: tuple[str, str]) -> None:
    primary, standby = replica_pair
    store = PostgresMemoryStore.from_url(f"{primary}?recallstore_standby_url={quote(standby)}")
    try:
        async with store:  # schema "recallstore" of the test-started primary
            scope = {"user": "from-a-url"}
            await store.write([MemoryWriteInput(scope=scope, content="routed by its URL")])
            hits = await store.search(MemorySearchQuery(query="routed", scope=scope))
            assert [hit.record.content for hit in hits] == ["routed by its URL"]
            assert store.read_routing["standby"] + store.read_routing["primary"] == 1
            assert "127.0.0.1" in store.describe().target
    finally:
        with psycopg.connect(primary, autocommit=True) as conn:
            conn.execute("DROP SCHEMA IF EXISTS recallstore CASCADE")


# A transaction that commits: the WAL up to its commit (a lock taken meanwhile
# included) is flushed and sent to the standby, which replays it.
_SENT = "SELECT txid_current()"


async def _replayed(primary: str, standby: str) -> None:
    # Waits until the standby has replayed everything the primary has written so far.
    async with (
        await psycopg.AsyncConnection.connect(primary, autocommit=True) as on_primary,
        await psycopg.AsyncConnection.connect(standby, autocommit=True) as on_standby,
    ):
        row = await (await on_primary.execute("SELECT pg_current_wal_flush_lsn()")).fetchone()
        assert row is not None
        await _until(on_standby, "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (row[0],))


async def _until(conn: psycopg.AsyncConnection[Any], sql: str, params: tuple[Any, ...]) -> None:
    # Polls ``sql`` until its first column is true; a bound far past what it takes,
    # for a busy machine, so a failure here means it never happened.
    for _ in range(600):
        row = await (await conn.execute(sql, params)).fetchone()
        if row is not None and row[0]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never true: {sql} {params}")


async def test_a_read_the_standby_cancels_for_its_replay_runs_again_on_the_primary(
    replica_pair: tuple[str, str], schema: str
) -> None:
    primary, standby = replica_pair
    records, order = f"{schema}.memory_records", f"{schema}.memory_scope_order"
    waiting = (
        "SELECT count(*) > 0 FROM pg_locks WHERE relation = to_regclass(%s) "
        "AND mode = 'AccessShareLock' AND NOT granted"
    )
    conflicts = (
        "SELECT confl_lock + confl_deadlock + confl_snapshot + confl_bufferpin "
        "FROM pg_stat_database_conflicts WHERE datname = 'postgres'"
    )
    scope = {"user": "u1"}
    async with (
        await psycopg.AsyncConnection.connect(standby, autocommit=True) as on_standby,
        await psycopg.AsyncConnection.connect(primary, autocommit=True) as on_primary,
        PostgresMemoryStore(primary, schema=schema, standby_url=standby) as store,
    ):
        await store.write([MemoryWriteInput(scope=scope, content="listed despite the conflict")])
        before = await (await on_standby.execute(conflicts)).fetchone()
        assert before is not None
        # The standby cancels a query that holds up its replay at once, not after 30 s.
        await on_standby.execute("ALTER SYSTEM SET max_standby_streaming_delay = 0")
        await on_standby.execute("SELECT pg_reload_conf()")
        try:
            async with (
                await psycopg.AsyncConnection.connect(primary) as first,
                await psycopg.AsyncConnection.connect(primary) as second,
            ):
                # The replayed lock on the records makes the standby's listing wait
                # there, holding its lock on the scope order (it locks that table first).
                await first.execute(f"LOCK TABLE {records} IN ACCESS EXCLUSIVE MODE")
                await on_primary.execute(_SENT)
                await _until(
                    on_standby,
                    "SELECT count(*) > 0 FROM pg_locks WHERE relation = to_regclass(%s) "
                    "AND mode = 'AccessExclusiveLock' AND granted",
                    (records,),
                )
                listing = asyncio.ensure_future(store.search(MemorySearchQuery(scope=scope)))
                await _until(on_standby, waiting, (records,))
                # Replaying this lock needs the one the listing holds: the standby
                # cancels the listing, and the store runs it again on the primary,
                # where it waits behind the same two locks until they are let go.
                await second.execute(f"LOCK TABLE {order} IN ACCESS EXCLUSIVE MODE")
                await on_primary.execute(_SENT)
                await _until(on_primary, waiting, (order,))
                assert not listing.done()
                await first.rollback()
                await second.rollback()
            hits = await listing
        finally:
            await on_standby.execute("ALTER SYSTEM RESET max_standby_streaming_delay")
            await on_standby.execute("SELECT pg_reload_conf()")
        assert [hit.record.content for hit in hits] == ["listed despite the conflict"]
        assert store.read_routing == {"standby": 0, "primary": 1}
        # It was the standby's replay that cancelled it (counted once the backend reports).
        await _until(on_standby, f"SELECT ({conflicts}) > %s", before)
