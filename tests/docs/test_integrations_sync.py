"""The blocking forms of docs/integrations.md's snippets run as written, each with its
framework's own offline model and blocking entry point, on a SyncMemoryStore over a
real SQLite file: conversation 1 saves a fact and corrects it with ``supersedes``,
conversation 2's model is shown the correction and not the superseded fact."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from agents import set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from google.genai import types
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from tests.adapters.langgraph.scripted_chat import ScriptedChatModel, tool_call
from tests.docs.test_integrations import (
    NEW,
    OLD,
    SCOPE,
    _AdkModel,
    check_remembered,
    run_snippet,
    saved_id,
)

from recallstore.adapters._session import MemorySession
from recallstore.records import MemorySearchQuery
from recallstore.sync import SyncMemoryStore


@pytest.fixture
def opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[SyncMemoryStore]]:
    """The snippets open ``memory.db`` in the working directory; each is closed after."""
    monkeypatch.chdir(tmp_path)
    stores: list[SyncMemoryStore] = []
    yield stores
    for store in stores:
        store.close()


def _run(opened: list[SyncMemoryStore], heading: str, **given: Any) -> dict[str, Any]:
    namespace = run_snippet(heading, **given)
    store = namespace["store"]
    assert isinstance(store, SyncMemoryStore)
    opened.append(store)
    return namespace


def test_pydantic_ai_run_sync(opened) -> None:
    seen: list[str | None] = []
    script: list[Any] = [
        lambda m: ToolCallPart("memory_save", {"content": OLD, "kind": "profile"}),
        lambda m: ToolCallPart(
            "memory_save", {"content": NEW, "kind": "profile", "supersedes": saved_id(last(m))}
        ),
        lambda m: TextPart("Noted."),
        lambda m: TextPart("Lisbon."),
    ]

    def last(messages: list[ModelMessage]) -> Any:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        return next(p.content for p in request.parts if isinstance(p, ToolReturnPart))

    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        return ModelResponse(parts=[script.pop(0)(messages)])

    namespace = _run(opened, "pydantic-ai: run_sync", model=FunctionModel(play))
    assert namespace["answer"](MemorySession(SCOPE, "c1"), "I moved to Lisbon.").output == "Noted."
    assert namespace["answer"](MemorySession(SCOPE, "c2"), "Where do I live?").output == "Lisbon."
    check_remembered(seen[-1])


def test_openai_agents_run_sync(opened) -> None:
    set_tracing_disabled(True)

    def second_save(call: ModelCall) -> list[Any]:
        [output] = [i["output"] for i in call.input if i.get("type") == "function_call_output"]
        args = {"content": NEW, "kind": "profile", "tags": None, "supersedes": saved_id(output)}
        return [function_call("memory_save", args, call_id="c2")]

    first = {"content": OLD, "kind": "profile", "tags": None, "supersedes": None}
    model = ScriptedModel(
        [
            [function_call("memory_save", first, call_id="c1")],
            ModelStep.respond(second_save),
            [assistant_message("Noted.")],
            [assistant_message("Lisbon.")],
        ]
    )
    answer = _run(opened, "OpenAI Agents SDK: Runner.run_sync", model=model)["answer"]
    assert answer(MemorySession(SCOPE, "c1"), [{"role": "user", "content": "I moved."}]) == "Noted."
    assert answer(MemorySession(SCOPE, "c2"), [{"role": "user", "content": "Where?"}]) == "Lisbon."
    check_remembered(model.calls[-1].system_instructions)


def test_google_adk_runner_run(opened) -> None:
    model = _AdkModel()
    namespace = _run(opened, "Google ADK: Runner.run", model=model)
    runner, sessions = namespace["runner"], namespace["sessions"]
    for text in ("I moved to Lisbon.", "Where do I live?"):
        session = sessions.create_session_sync(app_name="travel", user_id="u1")
        message = types.Content(role="user", parts=[types.Part(text=text)])
        for _ in runner.run(user_id="u1", session_id=session.id, new_message=message):
            pass
    check_remembered(model.seen[-1])
    store: SyncMemoryStore = namespace["store"]
    other = store.search(MemorySearchQuery(scope={"app": "travel", "user": "u2"}))
    assert other == []


def test_langchain_invoke(opened) -> None:
    prompts: list[list[BaseMessage]] = []

    def play(messages: Sequence[BaseMessage]) -> AIMessage:
        prompts.append(list(messages))
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if "moved" not in str(messages[1].content):
            return AIMessage(content="Lisbon.")
        if not results:
            return tool_call("memory_save", {"content": OLD, "kind": "profile"}, "c1")
        if len(results) == 1:
            new = {"content": NEW, "kind": "profile", "supersedes": saved_id(results[0].content)}
            return tool_call("memory_save", new, "c2")
        return AIMessage(content="Noted.")

    namespace = _run(opened, "LangChain: invoke", model=ScriptedChatModel(script=play))
    assert namespace["answer"](SCOPE, "c1", "I moved to Lisbon.") == "Noted."
    assert namespace["answer"](SCOPE, "c2", "Where do I live?") == "Lisbon."
    check_remembered(str(prompts[-1][0].content))


def test_langgraph_store_invoke(opened) -> None:
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

    namespace = _run(opened, "LangGraph store: invoke", model=ScriptedChatModel(script=play))
    assert namespace["answer"]("u1", "I moved to Lisbon.") == "Noted."
    assert namespace["answer"]("u1", "Where do I live?") == NEW
    assert namespace["answer"]("u2", "Where do I live?") == "No idea."
    (item,) = namespace["memories"].search(("memories", "u1"))
    history = namespace["memories"].history(("memories", "u1"), item.key)
    assert [record.content for record in history] == [OLD, NEW]
