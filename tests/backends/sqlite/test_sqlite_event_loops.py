"""A SQLite store used under one event loop, then under another: a script that runs each
step with ``asyncio.run()``, a notebook cell run again, a test per loop."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from recallstore import ConfigurationError, MemorySearchQuery, MemoryWriteInput
from recallstore.backends.journal import JournalSettings
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.loop_lock import LoopLock

SCOPE = {"user": "ana"}
JOURNAL_SECONDS = 30  # far past the flusher's 0.05 s, on any machine


async def busy_step(store: SqliteMemoryStore, tag: str) -> None:
    """Calls at once, so that they wait on the store's lock."""
    await store.open()
    writes = [MemoryWriteInput(scope=SCOPE, content=f"{tag} note {n}") for n in range(10)]
    await asyncio.gather(*(store.write([one]) for one in writes))
    query = MemorySearchQuery(query=tag, scope=SCOPE)
    await asyncio.gather(*(store.search(query) for _ in range(5)))


async def journaled_searches(store: SqliteMemoryStore, expected: int) -> int:
    """How many searches the journal holds, once the flusher wrote ``expected`` (or
    gave up waiting)."""
    deadline = time.monotonic() + JOURNAL_SECONDS
    while True:
        entries = await store.read_journal(limit=1000)
        found = sum(entry.type == "agent.memory.search" for entry in entries)
        if found >= expected or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.05)


def test_a_store_serves_one_event_loop_after_another(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "memory.db", journal=JournalSettings(flush_seconds=0.05))
    asyncio.run(busy_step(store, "first"))

    async def second() -> int:
        await busy_step(store, "second")
        return await journaled_searches(store, 10)

    # Before, this loop failed on the lock the first loop's waiting calls had bound; and
    # the events of its searches waited for aclose(): the flusher was the first loop's.
    assert asyncio.run(second()) == 10

    async def last() -> int:
        hits = await store.search(MemorySearchQuery(scope=SCOPE, limit=100))
        await store.aclose()
        return len(hits)

    assert asyncio.run(last()) == 20


def test_a_second_loop_is_refused_while_the_first_holds_the_lock() -> None:
    lock = LoopLock("/tmp/memory.db")
    held, done = threading.Event(), threading.Event()

    async def hold() -> None:
        async with lock:
            held.set()
            await asyncio.to_thread(done.wait)

    holder = threading.Thread(target=asyncio.run, args=(hold(),))
    holder.start()
    try:
        assert held.wait(JOURNAL_SECONDS)
        with pytest.raises(ConfigurationError, match="in use by another event loop"):
            asyncio.run(lock.acquire())
    finally:
        done.set()
        holder.join()

    async def take() -> bool:
        async with lock:
            return lock.locked()

    assert asyncio.run(take())  # free again: this loop takes it
