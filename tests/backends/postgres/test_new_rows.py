"""A write's new rows built from its inputs (``rows.new_insert_arrays``) are the rows its
built records give (``rows.insert_arrays``), and the records built while the server
inserts them (``connections.meanwhile``) leave no statement in flight."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.postgres.connections import meanwhile
from recallstore.backends.postgres.rows import insert_arrays, new_insert_arrays
from recallstore.records import MemorySearchQuery, MemoryTarget, MemoryWriteInput, Provenance
from recallstore.store import NewRecords

NOW = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)

INPUTS = {
    "plain": MemoryWriteInput(scope={"user": "u1"}, content="plain"),
    "every field": MemoryWriteInput(
        scope={"user": "Ünï 用户", "tenant": 't"1', "a_much_longer_key": "v"},
        kind="profile",
        content="every field set, Straße and 東京",
        tags=["b", " a", "a"],
        provenance=Provenance(conversation_id="c", run_id="r", author="me"),
        target=MemoryTarget(section="s", key="k"),
        supports=[Provenance(author="x"), Provenance(run_id="y")],
        expires_at=NOW + timedelta(days=3),
        idempotency_key="key",
        observed_at=NOW - timedelta(days=400),
    ),
    "dict payload": MemoryWriteInput(
        scope={}, content="with a payload", payload={"x": [1, 2.5, None, "s", {"y": True}]}
    ),
    "list payload": MemoryWriteInput(scope={"user": "u1"}, content="list", payload=[1e16, -0.0]),
    "scalar payload": MemoryWriteInput(scope={"user": "u1"}, content="scalar", payload="text"),
    "observed at the stamp": MemoryWriteInput(scope={"user": "u1"}, content="x", observed_at=NOW),
    "observed just after the stamp": MemoryWriteInput(
        scope={"user": "u1"}, content="x", observed_at=NOW + timedelta(seconds=1)
    ),
    "observed just before the stamp": MemoryWriteInput(
        scope={"user": "u1"}, content="x", observed_at=NOW - timedelta(microseconds=1)
    ),
    "empty tags and supports": MemoryWriteInput(scope={"user": "u1"}, content="y", tags=[]),
    # Its word is too long to index (over 2,047 bytes), its scope pair is not.
    "a long word": MemoryWriteInput(scope={"k" * 256: "é" * 256}, content="東" * 700 + " ok"),
}


def _batch(inputs: list[MemoryWriteInput]) -> NewRecords:
    ids = [f"01m{n:023d}" for n in range(len(inputs))]
    stamps = [NOW + timedelta(microseconds=n) for n in range(len(inputs))]
    return NewRecords(inputs, ids, stamps)


@pytest.mark.parametrize("name", list(INPUTS))
def test_one_input_gives_its_records_row(name: str) -> None:
    batch = _batch([INPUTS[name]])
    assert not batch.built
    expected = insert_arrays(batch.records())
    assert new_insert_arrays(batch) == expected


def test_a_mixed_batch_gives_its_records_rows() -> None:
    batch = _batch(list(INPUTS.values()) * 2)
    arrays = new_insert_arrays(batch)
    assert arrays == insert_arrays(batch.records())
    assert all(column is None or len(column) == len(batch.inputs) for column in arrays)


@pytest.mark.parametrize("page", [slice(0, 3), slice(3, 9), slice(9, None), slice(20, None)])
def test_a_page_gives_its_records_rows(page: slice) -> None:
    batch = _batch(list(INPUTS.values()) * 2)
    assert new_insert_arrays(batch, page) == insert_arrays(batch.records()[page])


def test_columns_no_input_fills_are_sent_as_null() -> None:
    batch = _batch([INPUTS["plain"], INPUTS["plain"]])
    arrays = new_insert_arrays(batch)
    names = ["tags", "provenance", "invalid_at", "invalid_reason", "superseded_by"]
    names += ["expires_at", "target", "payload", "idempotency_key", "observed_at"]
    names += ["updated_at", "supports"]  # the statement fills in created_at and []
    assert sum(column is None for column in arrays) == len(names)


def test_updated_at_and_supports_are_sent_when_a_record_differs() -> None:
    batch = _batch([INPUTS["plain"], INPUTS["every field"]])
    records = batch.records()
    later = records[0].model_copy(update={"updated_at": NOW + timedelta(days=1)})
    arrays = insert_arrays([later, records[1]])
    assert [NOW + timedelta(days=1), NOW + timedelta(microseconds=1)] in arrays
    supports = '[{"conversation_id":null,"run_id":null,"author":"x"},'
    supports += '{"conversation_id":null,"run_id":"y","author":null}]'
    assert [None, supports] in arrays


async def test_records_built_during_the_insert_read_back_as_written(
    postgres_url: str, postgres_schema: str
) -> None:
    inputs = [inp for name, inp in INPUTS.items() if "observed just after" not in name]
    many = [
        MemoryWriteInput(scope={"user": f"u{n % 7}"}, content=f"note {n} about the garden")
        for n in range(1_234)  # three pages, the last a short one
    ]
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        for batch in (inputs, many):
            written = await store.write(batch)
            assert [record.content for record in written] == [inp.content for inp in batch]
            assert [await store.get(record.id) for record in written] == written
        hits = await store.search(MemorySearchQuery(query="garden", scope={"user": "u3"}))
        assert len(hits) == 10
        assert {hit.record.scope["user"] for hit in hits} == {"u3"}


async def test_meanwhile_does_the_work_during_the_statement(postgres_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute("CREATE TEMPORARY TABLE noted (n int)")
        sent = conn.execute("INSERT INTO noted SELECT 42 FROM pg_sleep(0.05)")
        assert await meanwhile(sent, lambda: "the work's") == "the work's"
        assert await (await conn.execute("SELECT n FROM noted")).fetchall() == [(42,)]


async def test_a_failed_statement_raises_after_the_work(postgres_url: str) -> None:
    done: list[str] = []
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            await meanwhile(conn.execute("SELECT 1 / 0"), lambda: done.append("work"))
        assert done == ["work"]
        assert await (await conn.execute("SELECT 1")).fetchone() == (1,)


async def test_failed_work_waits_for_the_statement_to_end(postgres_url: str) -> None:
    def work() -> Any:
        raise LookupError("the work failed")

    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        with pytest.raises(LookupError, match="the work failed"):
            await meanwhile(conn.execute("SELECT pg_sleep(0.2)"), work)
        # Nothing left in flight: the connection takes the next statement at once.
        assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert await (await conn.execute("SELECT 2")).fetchone() == (2,)


async def test_a_cancelled_caller_leaves_no_statement_behind(postgres_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        running = meanwhile(conn.execute("SELECT pg_sleep(0.2)"), lambda: None)
        call: asyncio.Future[None] = asyncio.ensure_future(running)
        await asyncio.sleep(0)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert await (await conn.execute("SELECT 3")).fetchone() == (3,)


async def test_a_write_whose_inputs_all_exist_inserts_nothing(
    postgres_url: str, postgres_schema: str
) -> None:
    keyed = MemoryWriteInput(scope={"user": "u1"}, content="kept", idempotency_key="k")
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        (first,) = await store.write([keyed])
        assert await store.write([keyed]) == [first]
        assert [hit.record for hit in await store.search(MemorySearchQuery())] == [first]
