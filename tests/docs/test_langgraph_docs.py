"""The LangChain ``create_agent`` and LangGraph store recipes in docs/integrations.md, and
the samples of docs/langgraph.md, run as written (tests/docs/test_snippet_types.py type-checks
the recipes with every other snippet of the page)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from tests.adapters.langgraph.scripted_chat import ScriptedChatModel, tool_call
from tests.docs.test_docs_samples import python_blocks, run_python
from tests.docs.test_integrations import NEW, OLD, SCOPE, check_remembered, run_snippet, snippets

from recallstore.adapters._session import MemorySession
from recallstore.backends.sqlite import SqliteMemoryStore

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ("LangChain create_agent", "LangGraph store")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteMemoryStore]:
    async with SqliteMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


async def test_create_agent_recipe_recalls_the_correction(store: SqliteMemoryStore) -> None:
    system_prompts: list[str] = []

    def play(messages: Sequence[BaseMessage]) -> AIMessage:
        assert isinstance(messages[0], SystemMessage)
        system_prompts.append(str(messages[0].content))
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if "moved" not in str(messages[1].content):
            return AIMessage(content="Lisbon.")
        if not results:
            return tool_call("memory_save", {"content": OLD, "kind": "profile"}, "c1")
        if len(results) == 1:
            old_id = json.loads(str(results[0].content))["memory"]["id"]
            new = {"content": NEW, "kind": "profile", "supersedes": old_id}
            return tool_call("memory_save", new, "c2")
        return AIMessage(content="Noted.")

    answer = run_snippet(RECIPES[0], store=store, model=ScriptedChatModel(script=play))["answer"]
    assert await answer(MemorySession(SCOPE, "c1"), "I moved to Lisbon.") == "Noted."
    assert len(set(system_prompts)) == 1  # the same prompt on every turn of conversation 1
    assert await answer(MemorySession(SCOPE, "c2"), "Where do I live?") == "Lisbon."
    check_remembered(system_prompts[-1])


async def test_langgraph_store_recipe_supersedes_and_stays_in_scope(
    store: SqliteMemoryStore,
) -> None:
    def play(messages: Sequence[BaseMessage]) -> AIMessage:
        results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        if "moved" in str(messages[0].content):
            if not results:
                return tool_call("manage_memory", {"content": OLD}, "c1")
            if len(results) == 1:
                key = results[0].removeprefix("created memory ")
                return tool_call(
                    "manage_memory", {"content": NEW, "action": "update", "id": key}, "c2"
                )
            return AIMessage(content="Noted.")
        if not results:
            return tool_call("search_memory", {"query": "lives"}, "c3")
        found = json.loads(results[0])
        return AIMessage(content=found[0]["value"]["content"] if found else "No idea.")

    namespace = run_snippet(RECIPES[1], store=store, model=ScriptedChatModel(script=play))
    assert await namespace["answer"]("u1", "I moved to Lisbon.") == "Noted."
    assert await namespace["answer"]("u1", "Where do I live?") == NEW
    assert await namespace["answer"]("u2", "Where do I live?") == "No idea."
    (item,) = await namespace["memories"].asearch(("memories", "u1"))
    history = await namespace["memories"].ahistory(("memories", "u1"), item.key)
    assert [record.content for record in history] == [OLD, NEW]


def test_the_recipes_are_short() -> None:
    found = snippets()
    for heading in RECIPES:
        lines = [line for line in found[heading].splitlines() if line.strip()]
        assert len(lines) <= 20, f"{heading}: {len(lines)} lines"


@pytest.mark.slow
def test_the_langgraph_page_samples_run(tmp_path: Path) -> None:
    for block in python_blocks("langgraph.md"):
        result = run_python(block, tmp_path)
        assert result.returncode == 0, result.stderr
        assert re.search(r"\S", result.stdout), "a sample prints what it shows"
