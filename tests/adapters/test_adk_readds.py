"""ADK re-adds a session many times: each event is stored once, also across processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types

from recallstore.adapters.adk import RecallstoreMemoryService
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.capability import MemoryCapability
from recallstore.records import MemoryRecord, MemorySearchQuery

SCOPE = {"app": "travel", "user": "u1"}


def _session(texts: list[str], session_id: str = "s1") -> Session:
    events = [
        Event(
            id=f"event-{number}",
            invocation_id="inv-1",
            timestamp=1_780_000_000.0 + number,  # as the session service keeps it
            author="user" if number % 2 == 0 else "assistant",
            content=types.Content(role="user", parts=[types.Part(text=text)]),
        )
        for number, text in enumerate(texts)
    ]
    return Session(id=session_id, app_name="travel", user_id="u1", events=events)


async def _every_record(store: SqliteMemoryStore) -> list[MemoryRecord]:
    hits = await store.search(
        MemorySearchQuery(scope=SCOPE, include_invalidated=True, include_expired=True, limit=1000)
    )
    return [hit.record for hit in hits]


async def test_adding_the_same_session_five_times_stores_each_event_once(
    tmp_path: Path,
) -> None:
    texts = ["I fly to Lisbon in April.", "Lisbon is lovely in spring.", "Book a window seat."]
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        memory = RecallstoreMemoryService(MemoryCapability(store, scope_fields=("app", "user")))
        for _ in range(5):
            await memory.add_session_to_memory(_session(texts))
        records = await _every_record(store)
        assert sorted(r.content for r in records) == sorted(texts)
        assert all(not r.is_invalidated for r in records)
        keys = sorted(r.idempotency_key or "" for r in records)
        assert [key.rsplit("/", 1)[0] for key in keys] == [
            "capture/event-0.0.0",
            "capture/event-1.0.0",
            "capture/event-2.0.0",
        ]
        # The session grows: only the new event is stored on the next add.
        await memory.add_session_to_memory(_session([*texts, "And an aisle seat back."]))
        assert len(await _every_record(store)) == 4
        # Another session's event with the same event id is another memory.
        await memory.add_session_to_memory(_session(texts[:1], session_id="s2"))
        assert len(await _every_record(store)) == 5


_RACER = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from adapters.test_adk_readds import _session
    from recallstore.adapters.adk import RecallstoreMemoryService
    from recallstore.backends.sqlite import SqliteMemoryStore
    from recallstore.capability import MemoryCapability

    async def main() -> None:
        go = Path(sys.argv[2])
        async with SqliteMemoryStore(sys.argv[1]) as store:
            memory = RecallstoreMemoryService(MemoryCapability(store, scope_fields=("app", "user")))
            Path(sys.argv[3]).touch()
            while not go.exists():
                time.sleep(0.005)
            texts = [f"event text number {{n}}" for n in range(40)]
            for _ in range(5):
                await memory.add_session_to_memory(_session(texts))

    asyncio.run(main())
    """
)


async def _create(db: Path) -> None:
    async with SqliteMemoryStore(db):
        pass  # created and migrated before the race


async def _stored(db: Path) -> list[MemoryRecord]:
    async with SqliteMemoryStore(db) as store:
        return await _every_record(store)


@pytest.mark.slow
def test_two_processes_adding_one_session_store_each_event_once(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    asyncio.run(_create(db))
    script = tmp_path / "racer.py"
    script.write_text(_RACER.format(tests=str(Path(__file__).parents[1])), encoding="utf-8")
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{n}" for n in range(2)]
    racers = [
        subprocess.Popen([sys.executable, str(script), str(db), str(go), str(flag)])
        for flag in ready
    ]
    try:
        for _ in range(6000):
            if all(flag.exists() for flag in ready) or any(r.poll() is not None for r in racers):
                break
            time.sleep(0.01)
        go.touch()  # both start adding at once
        codes = [racer.wait(timeout=120) for racer in racers]
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
    assert codes == [0, 0]
    records = asyncio.run(_stored(db))
    assert len(records) == 40
    assert len({r.idempotency_key for r in records}) == 40
    assert all(not r.is_invalidated for r in records)
