"""The SQLite event journal: write events in the write's transaction, buffered search
events, ids that survive restarts, retention, opt-in fields, and the change signal."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from recallstore import (
    BaseMemoryStore,
    ConfigurationError,
    InMemoryMemoryStore,
    MemoryNotFoundError,
    MemorySearchQuery,
    MemoryWriteInput,
)
from recallstore.backends._tuning import tune
from recallstore.backends.journal import JournalSettings, SupportsJournal
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.context import call_context
from recallstore.events.journal import journal_event, tail_events
from recallstore.events.models import MemorySearchEvent, MemoryWriteEvent
from recallstore.recall import assemble_recall
from recallstore.store import JOURNAL_EXTENSION

SCOPE = {"tenant": "acme", "user": "u_1"}


def note(text: str, **fields: object) -> MemoryWriteInput:
    return MemoryWriteInput(scope=SCOPE, content=text, **fields)


def rows(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        found = conn.execute("SELECT seq, type FROM memory_journal ORDER BY seq").fetchall()
    conn.close()
    return [(int(seq), str(kind)) for seq, kind in found]


async def test_each_change_is_journaled_in_its_transaction_and_a_failed_one_is_not(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        assert JOURNAL_EXTENSION in store.capabilities().extensions
        assert isinstance(store, SupportsJournal)
        with call_context(conversation_id="conv-1", run_id="run-1"):
            [first] = await store.write([note("Lives in Paris", kind="profile")])
        # Written by another connection: the journal row is already in the file.
        assert rows(db) == [(1, "agent.memory.write")]
        with pytest.raises(MemoryNotFoundError):
            await store.write([note("Lives in Lyon", supersedes="no-such-record")])
        [second] = await store.write([note("Lives in Lyon", supersedes=first.id)])
        await store.invalidate(second.id, "moved again")
        await store.delete(first.id)
        entries = await store.read_journal()
    events = [journal_event(entry) for entry in entries]
    assert [e.id for e in events] == [1, 2, 3, 4]
    assert all(isinstance(e, MemoryWriteEvent) for e in events)
    data = [e.data for e in events if isinstance(e, MemoryWriteEvent)]
    assert [d.operation for d in data] == ["write", "supersede", "invalidate", "delete"]
    assert data[0].record_ids == (first.id,)
    assert data[0].kinds == ("profile",)
    assert data[1].superseded_ids == (first.id,)
    assert data[2].reason_chars == len("moved again")
    assert data[2].reason is None
    assert data[3].record_ids == (first.id,)
    assert data[3].count == 1
    assert events[0].conversation_id == "conv-1"
    assert events[0].run_id == "run-1"
    assert events[0].scope == SCOPE
    # Content and reasons are opt-in, exactly as for ObservedMemoryStore.
    assert data[0].contents is None


async def test_opt_in_fields_are_stored_only_when_asked_and_read_only_when_asked(
    tmp_path: Path,
) -> None:
    settings = JournalSettings(include_content=True, include_query_text=True)
    async with SqliteMemoryStore(tmp_path / "memory.db", journal=settings) as store:
        [record] = await store.write([note("Prefers green tea")])
        await store.invalidate(record.id, "no longer")
        await store.search(MemorySearchQuery(query="tea", scope=SCOPE))
        await store.flush_journal()
        entries = await store.read_journal()
    assert entries[0].envelope["data"]["contents"] == ["Prefers green tea"]
    stripped = [journal_event(entry) for entry in entries]
    shown = [
        journal_event(entry, include_content=True, include_query_text=True) for entry in entries
    ]
    assert [getattr(e.data, "contents", None) for e in stripped] == [None, None, None]
    assert shown[0].data.contents == ("Prefers green tea",)  # type: ignore[attr-defined]
    assert shown[1].data.reason == "no longer"  # type: ignore[attr-defined]
    assert isinstance(shown[2], MemorySearchEvent)
    assert shown[2].data.query == "tea"
    assert isinstance(stripped[2], MemorySearchEvent)
    assert stripped[2].data.query is None


async def test_searches_and_recalls_are_buffered_not_written_with_the_search(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    settings = JournalSettings(flush_seconds=30)
    async with SqliteMemoryStore(db, journal=settings) as store:
        await store.write([note("Prefers green tea", kind="preference")])
        await assemble_recall(store, SCOPE, "what tea?")
        # Nothing written by the searches yet: they cost no transaction.
        assert rows(db) == [(1, "agent.memory.write")]
        await store.flush_journal()
        assert [kind for _, kind in rows(db)] == [
            "agent.memory.write",
            "agent.memory.search",
            "agent.memory.search",
            "agent.memory.recall",
        ]
    async with SqliteMemoryStore(db, journal=settings) as store:
        await store.search(MemorySearchQuery(scope=SCOPE))
    # Closing the store flushes what is buffered.
    assert rows(db)[-1] == (5, "agent.memory.search")


async def test_ids_keep_increasing_across_restarts_and_are_never_reused_after_pruning(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    settings = JournalSettings(max_events=2)
    async with SqliteMemoryStore(db, journal=settings) as store:
        for n in range(5):
            await store.write([note(f"fact {n}")])
        assert await store.journal_bounds() == (4, 5)
    async with SqliteMemoryStore(db, journal=settings) as store:
        await store.write([note("after the restart")])
        assert [entry.id for entry in await store.read_journal()] == [5, 6]
        assert await store.journal_bounds() == (5, 6)


@pytest.mark.slow
async def test_retention_holds_the_journal_at_its_bound_under_a_long_run(
    tmp_path: Path,
) -> None:
    """100,000 events (recalls, flushed in batches of 1,000, and a write between
    batches) against a bound of 500: never more than 500 rows, always the newest."""
    from recallstore.recall import Recall

    db = tmp_path / "memory.db"
    settings = JournalSettings(max_events=500, flush_seconds=60)
    recall = Recall(
        scope=SCOPE,
        user_text="hi",
        entries=(),
        profile_count=0,
        hit_count=0,
        omitted=0,
        truncated=False,
        budget_chars=100,
        used_chars=0,
    )
    async with tune(SqliteMemoryStore(db, journal=settings), synchronous="NORMAL") as store:
        total = 0
        while total < 100_000:
            for _ in range(999):
                store.observe_recall(recall)
            await store.flush_journal()
            await store.write([note(f"batch {total}")])
            total += 1000
            oldest, newest = await store.journal_bounds()
            assert newest == total
            assert oldest == newest - 499
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM memory_journal").fetchone() == (500,)
        conn.close()


@pytest.mark.slow
async def test_rows_older_than_max_age_are_pruned_in_the_background(tmp_path: Path) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    settings = JournalSettings(max_age=timedelta(hours=1), flush_seconds=0.05)
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db, journal=settings, clock=lambda: now[0]) as store:
        await store.write([note("old news")])
        now[0] += timedelta(hours=2)
        await store.write([note("fresh")])
    async with SqliteMemoryStore(db, journal=settings, clock=lambda: now[0]) as store:
        for _ in range(200):
            if len(rows(db)) == 1:
                break
            await asyncio.sleep(0.05)
        assert [entry.id for entry in await store.read_journal()] == [2]
        # Everything is old now, but the newest row stays, so no id is handed out twice.
        now[0] += timedelta(hours=2)
        await asyncio.sleep(1.3)  # the flusher prunes by age every 20th tick (of 0.05 s)
        assert await store.journal_bounds() == (2, 2)
        await store.write([note("newer still")])
        assert [entry.id for entry in await store.read_journal()] == [2, 3]


async def test_a_tailer_wakes_on_another_connections_commit(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as reader, SqliteMemoryStore(db) as writer:
        seen: list[int] = []

        async def follow() -> None:
            async for entry in reader.follow_journal(0):
                seen.append(entry.id)
                if len(seen) == 3:
                    return

        task = asyncio.create_task(follow())
        for n in range(3):
            await writer.write([note(f"fact {n}")])
            await asyncio.sleep(0.01)
        await asyncio.wait_for(task, timeout=10)
        assert seen == [1, 2, 3]


async def test_tail_events_filters_by_scope_and_keeps_the_newest(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        for n in range(6):
            scope = {"user": "a" if n % 2 else "b"}
            await store.write([MemoryWriteInput(scope=scope, content=f"fact {n}")])
        got = [e async for e in tail_events(store, last=2, scope={"user": "a"})]
    assert [e.id for e in got] == [4, 6]
    assert all(e.scope == {"user": "a"} for e in got)


async def test_a_store_without_a_journal_says_so(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "memory.db", journal=None) as store:
        assert JOURNAL_EXTENSION not in store.capabilities().extensions
        await store.write([note("unjournaled")])
        with pytest.raises(ConfigurationError, match="keeps no event journal"):
            await store.read_journal()
    assert rows(tmp_path / "memory.db") == []
    memory = InMemoryMemoryStore()
    assert JOURNAL_EXTENSION not in memory.capabilities().extensions
    with pytest.raises(ConfigurationError, match="keeps no event journal"):
        # A backend without the journal primitives cannot be given journal settings.
        BaseMemoryStore.__init__(memory, journal=JournalSettings())


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_events": 0}, "max_events"),
        ({"max_age": timedelta(0)}, "max_age"),
        ({"flush_seconds": 0}, "flush_seconds"),
    ],
)
def test_bad_journal_settings_are_refused_by_name(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        JournalSettings(**fields)  # type: ignore[arg-type]
