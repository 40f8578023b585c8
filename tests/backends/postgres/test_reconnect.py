"""Reconnection after a failover, on the test-started replication pair
(tests/postgres_replica.py): a URL naming every node writes to the one that takes
writes, and a pooled connection to a node that stopped taking writes (a primary fenced
read-only) fails the write clearly, changes nothing, and is dropped, so the same store
writes again once a primary is reachable, without being reopened; and a standby the
store reads from that gets promoted is passed over for the primary. The crash-and-promote
case under load is tests/backends/postgres/test_failover.py."""

from __future__ import annotations

import time
import uuid
from urllib.parse import urlsplit

import psycopg
import pytest
from tests.postgres_failover import FailoverPair
from tests.postgres_replica import _binaries, replica_pair, replica_schema

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.errors import StoreUnavailableError
from recallstore.records import MemorySearchQuery, MemoryWriteInput

__all__ = ["replica_pair", "replica_schema"]

SCOPE = {"user": "u1"}
_BOUND = 60.0  # seconds for a server to act on what it was told


@pytest.fixture
def schema(replica_schema: str) -> str:
    return replica_schema


def _both_nodes(standby: str, primary: str) -> str:
    """One URL naming the standby first, then the primary, for the node taking writes."""
    nodes = ",".join(urlsplit(url).netloc.split("@")[1] for url in (standby, primary))
    return f"postgresql://postgres@{nodes}/postgres?target_session_attrs=read-write"


def _until(url: str, sql: str, wanted: object) -> None:
    deadline = time.monotonic() + _BOUND
    while True:
        with psycopg.connect(url, autocommit=True) as conn:
            if conn.execute(sql).fetchall() == wanted:
                return
        assert time.monotonic() < deadline, f"{sql} never gave {wanted!r}"
        time.sleep(0.05)


def _fence(url: str, read_only: bool) -> None:
    """Make the server refuse (or take again) writes in every session, as a failover
    tool fences a primary it demotes; returns once new sessions see it."""
    with psycopg.connect(url, autocommit=True) as conn:
        if read_only:
            conn.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        else:
            conn.execute("ALTER SYSTEM RESET default_transaction_read_only")
        conn.execute("SELECT pg_reload_conf()")
    _until(url, "SHOW default_transaction_read_only", [("on" if read_only else "off",)])


async def test_a_url_naming_every_node_writes_to_the_primary(
    replica_pair: tuple[str, str], schema: str
) -> None:
    primary, standby = replica_pair
    async with PostgresMemoryStore(_both_nodes(standby, primary), schema=schema) as store:
        [record] = await store.write([MemoryWriteInput(scope=SCOPE, content="to the primary")])
        assert await store.get(record.id) == record
        assert "127.0.0.1" in store.describe().target
    with psycopg.connect(primary) as conn:
        row = conn.execute(f"SELECT content FROM {schema}.memory_records").fetchall()
    assert row == [("to the primary",)]


async def test_a_connection_to_a_node_fenced_read_only_is_dropped_and_the_store_writes_again(
    replica_pair: tuple[str, str], schema: str
) -> None:
    primary, _ = replica_pair
    name = f"fence_{uuid.uuid4().hex[:8]}"
    sessions = f"SELECT pid FROM pg_stat_activity WHERE application_name = '{name}'"
    url = f"{primary}?application_name={name}"
    async with PostgresMemoryStore(url, schema=schema, max_connections=1) as store:
        await store.write([MemoryWriteInput(scope=SCOPE, content="before the fence")])
        with psycopg.connect(primary, autocommit=True) as conn:
            before = conn.execute(sessions).fetchall()
        assert len(before) == 1
        _fence(primary, read_only=True)
        try:
            # One statement first: a session applies a reloaded setting between commands.
            assert await store.get("absent") is None
            with pytest.raises(StoreUnavailableError) as raised:
                await store.write([MemoryWriteInput(scope=SCOPE, content="while fenced")])
            assert "read-only" in raised.value.reason
            assert "target_session_attrs=read-write" in raised.value.reason
            # The connection that reached the fenced node is gone, not back in the pool.
            _until(primary, f"{sessions} AND pid = {before[0][0]}", [])
        finally:
            _fence(primary, read_only=False)
        assert await store.get("absent") is None  # a session that saw the fence lifted
        await store.write([MemoryWriteInput(scope=SCOPE, content="after the fence")])
    with psycopg.connect(primary) as conn:
        rows = conn.execute(
            f"SELECT content FROM {schema}.memory_records ORDER BY created_at"
        ).fetchall()
    assert rows == [("before the fence",), ("after the fence",)]


async def test_a_promoted_standby_is_no_longer_read_as_a_standby() -> None:
    binaries = _binaries()
    if binaries is None:
        pytest.skip("needs the PostgreSQL server binaries")
    pair = FailoverPair(binaries, synchronous=False)
    try:
        pair.start()
        async with PostgresMemoryStore(
            pair.node_url(0), schema="routed", standby_url=pair.node_url(1), standby_wait=5.0
        ) as store:
            await store.write([MemoryWriteInput(scope=SCOPE, content="replicated")])
            [hit] = await store.search(MemorySearchQuery(query="replicated", scope=SCOPE))
            assert store.read_routing == {"standby": 1, "primary": 0}
            pair.promote()
            # It holds the write (its replay position is past it) but is a standby no more.
            [hit] = await store.search(MemorySearchQuery(query="replicated", scope=SCOPE))
            assert hit.record.content == "replicated"
            assert store.read_routing == {"standby": 1, "primary": 1}
    finally:
        pair.stop()
