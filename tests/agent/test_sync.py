"""recallstore.sync: blocking calls over a real SQLite file, from many threads, inside a
running event loop (a notebook's), and a clean close."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from recallstore.errors import ConfigurationError, StoreUnavailableError
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.sync import BackgroundLoop, SyncMemoryCapability, SyncMemoryStore, SyncToolbox

SCOPE = {"tenant": "acme", "user": "u1"}


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "recallstore-sync"]


def test_the_six_calls_block_and_return_what_the_store_returns(tmp_path: Path) -> None:
    with SyncMemoryStore(tmp_path / "memory.db") as store:
        assert store.capabilities().durable is True
        (old,) = store.write([MemoryWriteInput(scope=SCOPE, content="Likes green tea.")])
        (new,) = store.write(
            [MemoryWriteInput(scope=SCOPE, content="Likes black tea.", supersedes=old.id)]
        )
        hits = store.search(MemorySearchQuery(scope=SCOPE, query="tea"))
        assert [hit.record.id for hit in hits] == [new.id]
        stored = store.get(old.id)
        assert stored is not None
        assert stored.superseded_by == new.id
        store.invalidate(new.id, "wrong")
        assert store.search(MemorySearchQuery(scope=SCOPE, query="tea")) == []
        store.delete(new.id)
        assert store.get(new.id) is None
    # Reopened: everything written before the close is there.
    with SyncMemoryStore(f"sqlite:///{tmp_path / 'memory.db'}") as again:
        assert again.get(old.id) is not None


def test_close_stops_the_loop_thread_and_later_calls_are_refused(tmp_path: Path) -> None:
    before = len(_loop_threads())
    store = SyncMemoryStore(tmp_path / "memory.db")
    assert len(_loop_threads()) == before + 1
    store.close()
    store.close()  # idempotent
    assert len(_loop_threads()) == before
    with pytest.raises(StoreUnavailableError, match="closed"):
        store.get("01m8sz7b9b1303a3xvx572azjj")


def test_a_store_that_fails_to_open_leaves_no_thread_behind(tmp_path: Path) -> None:
    before = len(_loop_threads())
    (tmp_path / "not-a-db").write_text("this is not a SQLite database, at all. " * 100)
    with pytest.raises(StoreUnavailableError):
        SyncMemoryStore(tmp_path / "not-a-db")
    assert len(_loop_threads()) == before


def test_many_threads_share_one_store(tmp_path: Path) -> None:
    with SyncMemoryStore(tmp_path / "memory.db") as store:

        def save(n: int) -> str:
            (record,) = store.write([MemoryWriteInput(scope=SCOPE, content=f"Fact {n}.")])
            return record.id

        with ThreadPoolExecutor(max_workers=8) as pool:
            ids = list(pool.map(save, range(40)))
        assert len(set(ids)) == 40
        listed = store.search(MemorySearchQuery(scope=SCOPE, limit=100))
        assert {hit.record.id for hit in listed} == set(ids)


def test_sync_calls_work_inside_a_running_event_loop(tmp_path: Path) -> None:
    # A notebook cell runs in a loop; the blocking call runs on the store's own loop.
    async def cell() -> int:
        with SyncMemoryStore(tmp_path / "memory.db") as store:
            store.write([MemoryWriteInput(scope=SCOPE, content="Lives in Lisbon.")])
            return len(store.search(MemorySearchQuery(scope=SCOPE, query="Lisbon")))

    assert asyncio.run(cell()) == 1


def test_a_blocking_call_from_the_loop_itself_is_refused() -> None:
    with BackgroundLoop() as loop:

        async def nested() -> int:
            return loop.run(asyncio.sleep(0, result=1))

        with pytest.raises(ConfigurationError, match="wait for itself"):
            loop.run(nested())
        assert loop.run(asyncio.sleep(0, result=2)) == 2


def test_close_cancels_what_is_still_running() -> None:
    loop = BackgroundLoop()
    pending = asyncio.run_coroutine_threadsafe(asyncio.sleep(3600), loop.loop)
    loop.close()
    assert pending.cancelled()
    assert loop.loop.is_closed()


def test_the_capability_and_the_toolbox_block(tmp_path: Path) -> None:
    with SyncMemoryStore(tmp_path / "memory.db") as store:
        memory = SyncMemoryCapability(store, scope_fields=["tenant", "user"])
        first = memory.instantiate(
            {**SCOPE, "session": "s1"}, conversation_id="c-1", first_user_text="Hi"
        )
        assert first.recall_block is None
        assert first.scope == SCOPE
        saved = first.toolbox.call("memory_save", {"content": "Likes green tea."})
        assert saved["ok"] is True, saved
        second = memory.instantiate(SCOPE, conversation_id="c-2", first_user_text="Which tea?")
        assert second.recall_block is not None
        assert "Likes green tea." in second.recall_block
        assert second.instructions.startswith(second.manual)
        assert second.toolbox.tools[0].name == "memory_save"
        later = memory.toolbox(SCOPE, conversation_id="c-2")
        assert later.call("memory_search", {"query": "tea"})["count"] == 1
        toolbox = SyncToolbox(store, {"tenant": "acme", "user": "u2"})
        assert toolbox.call("memory_search", {"query": "tea"})["count"] == 0
        assert len(toolbox.openai_tools()) == len(toolbox.anthropic_tools())
        assert "memory_save" in toolbox.manual


def test_a_loop_cannot_close_itself_and_stays_usable() -> None:
    with BackgroundLoop() as loop:

        async def close_from_inside() -> None:
            loop.close()

        with pytest.raises(ConfigurationError, match="its own thread"):
            loop.run(close_from_inside())
        assert not loop.closed
        assert loop.run(asyncio.sleep(0, result=3)) == 3
    assert loop.closed
