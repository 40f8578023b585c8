"""The scripted model and the demo built on it, end to end on real SQLite files."""

from __future__ import annotations

from pathlib import Path

import pytest

from recallstore import InMemoryMemoryStore, MemorySearchQuery
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.demo import DEMO_SCOPE, run_demo
from recallstore.prompt import RECALL_CLOSE, RECALL_OPEN
from recallstore.scripted import (
    Reply,
    ScriptedConversation,
    ScriptedModel,
    ScriptExhaustedError,
    ToolCall,
)
from recallstore.toolbox import MemoryToolbox


async def test_scripted_model_dispatches_through_the_toolbox() -> None:
    async with InMemoryMemoryStore() as store:
        toolbox = MemoryToolbox(store, {"user": "u1"})
        model = ScriptedModel(
            [
                ToolCall("memory_save", {"content": "Likes jazz."}),
                ToolCall("memory_save", {"content": "x", "scope": {"user": "u2"}}),
                Reply("done"),
            ]
        )
        chat = ScriptedConversation(model, toolbox, system_prompt="SYSTEM")
        assert await chat.send("remember I like jazz") == "done"
        results = [m.result for m in chat.messages if m.role == "tool"]
        assert results[0] is not None
        assert results[0]["ok"] is True
        assert results[1] is not None
        assert results[1]["error"]["code"] == "invalid_arguments"
        assert [m.role for m in model.requests[0]] == ["system", "user"]
        assert model.requests[0][0].content == "SYSTEM"
        assert model.remaining == 0
        hits = await store.search(MemorySearchQuery(query="jazz"))
        assert [h.record.content for h in hits] == ["Likes jazz."]
        with pytest.raises(ScriptExhaustedError):
            await chat.send("again")


async def test_a_runaway_script_stops_itself() -> None:
    async with InMemoryMemoryStore() as store:
        model = ScriptedModel([ToolCall("memory_list")] * 5)
        chat = ScriptedConversation(model, MemoryToolbox(store, {"user": "u"}), system_prompt="")
        with pytest.raises(ScriptExhaustedError, match="no reply after 3 tool calls"):
            await chat.send("loop", max_steps=3)


async def test_demo_tells_the_whole_story_and_can_run_twice(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    for run in range(2):
        lines: list[str] = []
        await run_demo(db, out=lines.append)
        text = "\n".join(lines)
        block = text[text.index(RECALL_OPEN) : text.index(RECALL_CLOSE)]
        assert "The user's name is Ana." in block
        assert "Ana's home city is Lisbon; she moved there from Berlin." in block
        assert "Ana's home city is Berlin." not in block
        assert "Ana is vegetarian." in block  # "Nothing with meat": found by meaning
        assert "keyword search alone would recall 1 profile + 0 hits" in text
        assert lines[0].startswith("Embedder: sentence-transformers/all-MiniLM-L6-v2 int8")
        assert "superseding" in text
        assert lines[-1].startswith("Open the memory lens dashboard: ")
        assert lines[-1].endswith(f"recallstore serve --db {db} --embedder default")
        assert f"Memory database: {db}" in lines
        assert ("cleared" in text) == (run == 1)
    async with SqliteMemoryStore(db) as store:
        listing = MemorySearchQuery(scope=DEMO_SCOPE, include_invalidated=True, limit=100)
        records = [hit.record for hit in await store.search(listing)]
    assert len(records) == 5
    assert sum(record.is_invalidated for record in records) == 1


async def test_the_demo_by_keywords_alone_misses_what_the_paraphrase_asks(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    lines: list[str] = []
    await run_demo(db, out=lines.append, semantic=False)
    text = "\n".join(lines)
    block = text[text.index(RECALL_OPEN) : text.index(RECALL_CLOSE)]
    assert "The user's name is Ana." in block  # the profile is always recalled
    assert "Ana is vegetarian." not in block
    assert "Lisbon" not in block
    assert lines[-1].endswith(f"recallstore serve --db {db}")
