"""The Postgres event journal: commit-ordered ids from concurrent stores, none for a
failed write, retention, and LISTEN/NOTIFY waking a tailer in another pool."""

from __future__ import annotations

import asyncio

import pytest

from recallstore import MemoryNotFoundError, MemorySearchQuery, MemoryWriteInput
from recallstore.backends.journal import JournalSettings
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.events.journal import journal_event
from recallstore.events.models import MemoryWriteEvent
from recallstore.store import JOURNAL_EXTENSION
from recallstore.testing._harness import StoreFactory
from recallstore.testing.journal import JournalConformance

SCOPE = {"user": "u_1"}


def note(text: str, **fields: str) -> MemoryWriteInput:
    return MemoryWriteInput(scope=SCOPE, content=text, **fields)


@pytest.mark.slow
async def test_concurrent_stores_get_increasing_ids_one_per_committed_write(
    postgres_url: str, postgres_schema: str
) -> None:
    stores = [PostgresMemoryStore(postgres_url, schema=postgres_schema) for _ in range(4)]
    for store in stores:
        await store.open()
    try:
        assert JOURNAL_EXTENSION in stores[0].capabilities().extensions

        async def writer(store: PostgresMemoryStore, worker: int) -> list[str]:
            saved = []
            for n in range(10):
                if n == 5:
                    with pytest.raises(MemoryNotFoundError):
                        await store.write([note("nope", supersedes="missing")])
                [record] = await store.write([note(f"worker {worker} fact {n}")])
                saved.append(record.id)
            return saved

        results = await asyncio.gather(*(writer(s, w) for w, s in enumerate(stores)))
        await stores[0].search(MemorySearchQuery(query="fact", scope=SCOPE))
        await stores[0].flush_journal()
        entries = await stores[1].read_journal(0, 1000)
    finally:
        for store in stores:
            await store.aclose()
    events = [journal_event(entry) for entry in entries]
    ids = [event.id for event in events]
    assert ids == sorted(set(ids))
    writes = [e for e in events if isinstance(e, MemoryWriteEvent)]
    assert sorted(r for e in writes for r in e.data.record_ids) == sorted(
        r for saved in results for r in saved
    )
    assert len(writes) == 40
    assert events[-1].type == "agent.memory.search"
    for saved in results:
        mine = [e.data.record_ids[0] for e in writes if e.data.record_ids[0] in saved]
        assert mine == saved


async def test_retention_and_a_listening_tailer(postgres_url: str, postgres_schema: str) -> None:
    settings = JournalSettings(max_events=3)
    async with (
        PostgresMemoryStore(postgres_url, schema=postgres_schema, journal=settings) as writer,
        PostgresMemoryStore(postgres_url, schema=postgres_schema, journal=settings) as reader,
    ):
        for n in range(5):
            await writer.write([note(f"fact {n}")])
        assert await reader.journal_bounds() == (3, 5)
        seen: list[int] = []

        async def follow() -> None:
            async for entry in reader.follow_journal(5):
                seen.append(entry.id)
                return

        task = asyncio.create_task(follow())
        await asyncio.sleep(0.2)  # the tailer is waiting on LISTEN
        [record] = await writer.write([note("wakes the tailer")])
        await asyncio.wait_for(task, timeout=10)
        assert seen == [6]
        await writer.delete(record.id)
        [last] = await reader.read_journal(6)
        event = journal_event(last)
        assert isinstance(event, MemoryWriteEvent)
        assert event.data.operation == "delete"
        assert event.data.record_ids == (record.id,)
        assert [entry.id for entry in await reader.read_journal()] == [5, 6, 7]


async def test_retention_holds_for_a_long_append_and_concurrent_writers(
    postgres_url: str, postgres_schema: str
) -> None:
    # The append's prune runs in the statement that inserts, after the lock is taken:
    # it must still keep at most max_events rows when one append carries more than
    # that (buffered search events) and when other stores append just before it.
    settings = JournalSettings(max_events=3)
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema, journal=settings) as one:
        await one.write([note("first")])
        for n in range(6):
            await one.search(MemorySearchQuery(query=f"fact {n}", scope=SCOPE))
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema, journal=settings) as seen:
        entries = await seen.read_journal()
        assert len(entries) == 3
        assert await seen.journal_bounds() == (entries[0].id, entries[-1].id)
        stores = [
            PostgresMemoryStore(postgres_url, schema=postgres_schema, journal=settings)
            for _ in range(4)
        ]
        for store in stores:
            await store.open()
        try:
            await asyncio.gather(
                *(store.write([note(f"w{n}")]) for store in stores for n in range(5))
            )
        finally:
            for store in stores:
                await store.aclose()
        after = await seen.read_journal()
        assert len(after) == 3
        assert [entry.id for entry in after] == list(range(after[0].id, after[0].id + 3))


class TestPostgresJournalKit(JournalConformance):
    @pytest.fixture
    def store_factory(self, postgres_url: str, postgres_schema: str) -> StoreFactory:
        return lambda: PostgresMemoryStore(postgres_url, schema=postgres_schema)
