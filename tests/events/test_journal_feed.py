"""A bus fed from a store's journal: journal ids, the backlog, and the SSE stream
resuming from a Last-Event-ID older than the bus's buffer out of the journal."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from recallstore import ConfigurationError, MemoryWriteInput
from recallstore.backends.journal import JournalSettings
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.events import EventBus, ObservedMemoryStore, StreamGap
from recallstore.events.journal import JournalFeed
from recallstore.events.sse import create_sse_app

TOKEN = "feed-token"


async def _write(store: SqliteMemoryStore, count: int) -> None:
    for n in range(count):
        await store.write([MemoryWriteInput(scope={"user": "u"}, content=f"fact {n}")])


async def _drain(bus: EventBus, subscription: Any, count: int) -> list[Any]:
    items = []
    for _ in range(count):
        items.append(await asyncio.wait_for(anext(subscription), 10))
    return items


async def test_the_feed_publishes_the_backlog_then_new_events_with_journal_ids(
    tmp_path: Path,
) -> None:
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        await _write(store, 5)
        bus = EventBus(replay_size=3, numbered_by="journal")
        with pytest.raises(ConfigurationError, match="numbered_by='journal'"):
            JournalFeed(store, EventBus())
        async with JournalFeed(store, bus):
            assert [event.id for event in bus.replay()] == [3, 4, 5]
            subscription = bus.subscribe()
            # A write through an observed store on this bus arrives once, from the journal.
            observed = ObservedMemoryStore(store, bus)
            await observed.write([MemoryWriteInput(scope={"user": "u"}, content="new")])
            [event] = await _drain(bus, subscription, 1)
            assert event.id == 6
            assert subscription.get_nowait() is None
        # A duplicate id is never delivered twice.
        assert bus.publish(event) is event
        assert bus.last_id == 6


async def test_history_fills_what_the_bus_no_longer_holds_and_gaps_what_is_pruned(
    tmp_path: Path,
) -> None:
    settings = JournalSettings(max_events=6)
    async with SqliteMemoryStore(tmp_path / "memory.db", journal=settings) as store:
        await _write(store, 10)  # the journal keeps ids 5..10
        bus = EventBus(replay_size=3, numbered_by="journal")
        async with JournalFeed(store, bus) as feed:
            gap, older = await feed.history(4, 8)
            assert gap is None
            assert [event.id for event in older] == [5, 6, 7]
            gap, older = await feed.history(2, 8)
            assert gap == StreamGap(reason="expired", after_id=2, first_available_id=5, missed=2)
            assert [event.id for event in older] == [5, 6, 7]


async def _sse_ids(app: Any, last_event_id: int, count: int) -> list[tuple[str, str | None]]:
    """(event, id) of the first ``count`` messages the app streams (ASGI, in process)."""
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "raw_path": b"/",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"authorization", f"Bearer {TOKEN}".encode()),
            (b"last-event-id", str(last_event_id).encode()),
        ],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 1),
    }
    done = asyncio.Event()
    body = bytearray()
    found: list[tuple[str, str | None]] = []

    async def receive() -> dict[str, Any]:
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] != "http.response.body":
            return
        body.extend(message.get("body", b""))
        found.clear()
        for block in body.decode().replace("\r\n", "\n").split("\n\n"):
            fields = dict(
                line.split(": ", 1)
                for line in block.splitlines()
                if ": " in line and line[0] != ":"
            )
            if "event" in fields:
                found.append((fields["event"], fields.get("id")))
        if len(found) >= count:
            done.set()

    task = asyncio.create_task(app(scope, receive, send))
    await asyncio.wait_for(done.wait(), 10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return found[:count]


async def test_the_stream_resumes_from_the_journal_past_the_bus_buffer(tmp_path: Path) -> None:
    settings = JournalSettings(max_events=6)
    async with SqliteMemoryStore(tmp_path / "memory.db", journal=settings) as store:
        await _write(store, 10)
        bus = EventBus(replay_size=2, numbered_by="journal")
        async with JournalFeed(store, bus) as feed:
            app = create_sse_app(bus, token=TOKEN, history=feed.history)
            # Ids 6..10 are retained by the journal; the bus holds only 9 and 10.
            got = await _sse_ids(app, 5, 5)
            assert got == [("agent.memory.write", str(n)) for n in range(6, 11)]
            # Ids 3 and 4 were pruned: a gap says so, then everything retained.
            got = await _sse_ids(app, 2, 7)
            assert got[0] == ("gap", None)
            assert got[1:] == [("agent.memory.write", str(n)) for n in range(5, 11)]


async def test_an_entry_of_an_unknown_type_is_skipped_not_fatal(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        await _write(store, 1)
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO memory_journal (at, type, envelope) VALUES (?, ?, ?)",
                ("2026-01-01T00:00:00.000000Z", "agent.memory.future", '{"type": "x"}'),
            )
        conn.close()
        await _write(store, 1)
        bus = EventBus(numbered_by="journal")
        async with JournalFeed(store, bus) as feed:
            assert [event.id for event in bus.replay()] == [1, 3]
            gap, older = await feed.history(0, 3)
            assert gap is None
            assert [event.id for event in older] == [1]
