"""Postgres: a batch takes the same few locks whatever its size (issue 36).

The server's lock table is one for every database on it (``max_locks_per_transaction``
× connections). A lock per idempotency key made a 13,000-message capture fail ("out of
shared memory"), lost concurrent captures and failed another database's writes. Now
the unique index decides a race for a key (``postgres.keys``): these tests capture
20,000 messages while counting the store's locks, three 5,000-message captures in
three processes beside another database's writer, and three processes racing for the
keys of one conversation.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.capture import capture

CAPTURER = """
import asyncio, sys
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.capture import capture

async def main(url, schema, conversation, count):
    transcript = [
        ("user" if n % 2 == 0 else "assistant", f"{conversation} says thing number {n}")
        for n in range(count)
    ]
    async with PostgresMemoryStore(url, schema=schema) as store:
        result = await capture(store, {"user": "ana"}, transcript, conversation_id=conversation)
    print(f"captured {len(result.records)}", flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


def _transcript(conversation: str, count: int) -> list[tuple[str, str]]:
    return [
        ("user" if n % 2 == 0 else "assistant", f"{conversation} says thing number {n}")
        for n in range(count)
    ]


def _capturers(url: str, schema: str, conversations: list[str], count: int) -> list[Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return [
        subprocess.Popen(
            [sys.executable, "-c", CAPTURER, url, schema, conversation, str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for conversation in conversations
    ]


async def _migrated(url: str, schema: str) -> None:
    async with PostgresMemoryStore(url, schema=schema):
        pass  # the children then open a schema that exists


@pytest.fixture
def other_database(postgres_url: str) -> Iterator[str]:
    """The URL of a fresh database on the same server, dropped after the test."""
    name = f"other_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield make_conninfo(postgres_url, dbname=name)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.mark.slow
async def test_a_20000_message_capture_succeeds_and_takes_few_locks(
    postgres_url: str, postgres_schema: str
) -> None:
    app = f"recallstore-locks-{uuid.uuid4().hex[:8]}"
    transcript = _transcript("long", 20_000)
    most = advisory = 0
    async with (
        PostgresMemoryStore(
            make_conninfo(postgres_url, application_name=app), schema=postgres_schema
        ) as store,
        await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as watcher,
    ):
        running = asyncio.ensure_future(
            capture(store, {"user": "ana"}, transcript, conversation_id="long")
        )
        while not running.done():
            cursor = await watcher.execute(
                "SELECT count(*), count(*) FILTER (WHERE l.locktype = 'advisory') "
                "FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid "
                "WHERE a.application_name = %s",
                (app,),
            )
            row = await cursor.fetchone()
            assert row is not None
            most, advisory = max(most, row[0]), max(advisory, row[1])
            await asyncio.sleep(0.02)
        result = await running
        again = await capture(store, {"user": "ana"}, transcript, conversation_id="long")
    assert result.added == 20_000
    assert again.added == 0
    assert [record.id for record in again.records] == [record.id for record in result.records]
    # Locks were seen while the capture ran, never one per key: a relation lock for the
    # table and each index it touches, the transaction's own, the journal's one advisory.
    assert 0 < most <= 64, most
    assert advisory <= 1, advisory


@pytest.mark.slow
def test_three_processes_capture_5000_messages_while_another_database_writes(
    postgres_url: str, postgres_schema: str, other_database: str
) -> None:
    asyncio.run(_migrated(postgres_url, postgres_schema))
    conversations = [f"conversation-{n}" for n in range(3)]
    children = _capturers(postgres_url, postgres_schema, conversations, 5_000)
    written = failed = while_all_ran = 0
    errors: list[str] = []
    with psycopg.connect(other_database, autocommit=True) as tenant:
        tenant.execute("CREATE TABLE tenant_rows (n integer PRIMARY KEY, note text)")
        # Another tenant of the server writes, one transaction at a time, until the
        # captures end.
        while any(child.poll() is None for child in children):
            all_running = all(child.poll() is None for child in children)
            try:
                with tenant.transaction():
                    tenant.execute(
                        "INSERT INTO tenant_rows VALUES (%s, %s)", (written, "another tenant")
                    )
                written += 1
                while_all_ran += all_running
            except psycopg.Error as exc:
                failed += 1
                errors.append(str(exc))
            time.sleep(0.02)
        stored = tenant.execute("SELECT count(*) FROM tenant_rows").fetchone()
    outcomes = [child.communicate(timeout=60) for child in children]
    for child, (out, err) in zip(children, outcomes, strict=True):
        assert child.returncode == 0, err[-2000:]
        assert out.strip() == "captured 5000", (out, err[-2000:])
    assert failed == 0, errors[:3]
    assert stored == (written,)
    assert while_all_ran >= 5, while_all_ran
    with psycopg.connect(postgres_url) as conn:
        count = conn.execute(
            f"SELECT count(*) FROM {postgres_schema}.memory_records WHERE invalid_at IS NULL"
        ).fetchone()
    assert count == (15_000,)


@pytest.mark.slow
async def test_processes_racing_for_one_conversations_keys_store_it_once(
    postgres_url: str, postgres_schema: str
) -> None:
    await _migrated(postgres_url, postgres_schema)
    children = _capturers(postgres_url, postgres_schema, ["shared"] * 3, 1_000)
    outcomes = [child.communicate(timeout=300) for child in children]
    for child, (out, err) in zip(children, outcomes, strict=True):
        assert child.returncode == 0, err[-2000:]
        assert out.strip() == "captured 1000", (out, err[-2000:])
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        again = await capture(
            store, {"user": "ana"}, _transcript("shared", 1_000), conversation_id="shared"
        )
    assert again.added == 0
    with psycopg.connect(postgres_url) as conn:
        counts = conn.execute(
            "SELECT count(*), count(DISTINCT idempotency_key), count(invalid_at) "
            f"FROM {postgres_schema}.memory_records"
        ).fetchone()
    assert counts == (1_000, 1_000, 0)  # one record per message, none superseded
