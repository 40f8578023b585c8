"""Every snippet in docs/integrations.md runs, with its framework's own offline model.

Each snippet is executed as written, with ``store`` and ``model`` (and ``client`` for
Anthropic) given; then the test talks to it twice: conversation 1 saves a fact and
corrects it with ``supersedes``, conversation 2's model must be shown the correction
in its instructions and not the superseded fact.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from agents import set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from anthropic import AsyncAnthropic
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic import Field
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from recallstore.adapters._session import MemorySession
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.prompt import RECALL_CLOSE
from recallstore.records import MemorySearchQuery

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
OLD, NEW = "Lives in Porto.", "Lives in Lisbon."
SCOPE = {"tenant": "acme", "user": "u1", "app": "travel"}
# 16: the typed Anthropic loop needs its MessageParam import (test_snippet_types.py).
MAX_LINES = 16


def snippets() -> dict[str, str]:
    """The one Python block under each second-level heading, by heading."""
    text = DOC.read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        blocks = re.findall(r"```python\n(.*?)```", body, re.S)
        if blocks:
            [found[heading.strip()]] = blocks
    return found


def run_snippet(heading: str, **given: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = dict(given)
    exec(compile(snippets()[heading], f"{DOC.name}: {heading}", "exec"), namespace)
    return namespace


def saved_id(result: Any) -> str:
    data = json.loads(result) if isinstance(result, str) else result
    assert data["ok"] is True, data
    return str(data["memory"]["id"])


def check_remembered(instructions: str | None) -> None:
    assert instructions is not None
    assert RECALL_CLOSE in instructions
    assert NEW in instructions
    assert OLD not in instructions


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteMemoryStore]:
    async with SqliteMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


def test_every_integration_has_one_short_snippet() -> None:
    found = snippets()
    assert set(found) == {
        "pydantic-ai",
        "OpenAI Agents SDK",
        "Google ADK",
        "LangChain",
        "LangChain create_agent",  # run by tests/docs/test_langgraph_docs.py
        "LangGraph store",  # run by tests/docs/test_langgraph_docs.py
        "Anthropic SDK",
        "Anthropic memory tool",
        # Their blocking forms and the recipes: run by tests/docs/test_integrations_sync.py
        # and tests/docs/test_recipes.py.
        "pydantic-ai: run_sync",
        "OpenAI Agents SDK: Runner.run_sync",
        "Google ADK: Runner.run",
        "LangChain: invoke",
        "LangGraph store: invoke",
        "smolagents",
        "DSPy",
    }
    for heading, code in found.items():
        if heading in ("LangChain create_agent", "LangGraph store"):
            continue  # their own length check, in test_langgraph_docs.py
        lines = [line for line in code.splitlines() if line.strip()]
        assert len(lines) <= MAX_LINES, f"{heading}: {len(lines)} lines"


async def test_pydantic_ai(store) -> None:
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

    answer = run_snippet("pydantic-ai", store=store, model=FunctionModel(play))["answer"]
    assert (await answer(MemorySession(SCOPE, "c1"), "I moved to Lisbon.")).output == "Noted."
    await answer(MemorySession(SCOPE, "c2"), "Where do I live?")
    check_remembered(seen[-1])


async def test_openai_agents(store) -> None:
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
    answer = run_snippet("OpenAI Agents SDK", store=store, model=model)["answer"]
    user = [{"role": "user", "content": "I moved to Lisbon."}]
    assert await answer(MemorySession(SCOPE, "c1"), user) == "Noted."
    await answer(MemorySession(SCOPE, "c2"), [{"role": "user", "content": "Where do I live?"}])
    instructions = model.calls[-1].system_instructions
    check_remembered(instructions)
    assert instructions is not None
    assert instructions.startswith("You are a helpful travel agent.")


class _AdkModel(BaseLlm):
    model: str = "scripted"
    seen: list[Any] = Field(default_factory=list)
    results: list[Any] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.seen.append(llm_request.config.system_instruction if llm_request.config else None)
        parts = llm_request.contents[-1].parts or []
        self.results += [p.function_response.response for p in parts if p.function_response]
        step = len(self.seen)
        if step == 1:
            part = _adk_call({"content": OLD, "kind": "profile"})
        elif step == 2:
            part = _adk_call(
                {"content": NEW, "kind": "profile", "supersedes": saved_id(self.results[-1])}
            )
        else:
            part = types.Part(text="Noted.")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def _adk_call(args: dict[str, Any]) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name="memory_save", args=args, id="c"))


async def test_google_adk(store) -> None:
    model = _AdkModel()
    namespace = run_snippet("Google ADK", store=store, model=model)
    runner, sessions = namespace["runner"], namespace["sessions"]
    for text in ("I moved to Lisbon.", "Where do I live?"):
        session = await sessions.create_session(app_name="travel", user_id="u1")
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
            pass
    check_remembered(model.seen[-1])
    assert str(model.seen[-1]).startswith("You plan trips.")


class _ToolCallingFake(GenericFakeChatModel):
    """langchain-core's fake chat model; binding tools changes nothing in a script."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


async def test_langchain(store) -> None:
    prompts: list[list[BaseMessage]] = []
    results: list[ToolMessage] = []

    def script() -> Any:
        yield AIMessage("", tool_calls=[_lc_call({"content": OLD, "kind": "profile"})])
        new = {"content": NEW, "kind": "profile", "supersedes": saved_id(results[-1].content)}
        yield AIMessage("", tool_calls=[_lc_call(new)])
        yield AIMessage("Noted.")
        yield AIMessage("Lisbon.")

    model = _ToolCallingFake(messages=script())
    namespace = run_snippet("LangChain", store=store, model=model)
    original = model.ainvoke

    async def recording(messages: list[BaseMessage], config: Any = None, **kw: Any) -> Any:
        prompts.append(list(messages))
        results[:] = [m for m in messages if isinstance(m, ToolMessage)]
        return await original(messages, config, **kw)

    object.__setattr__(model, "ainvoke", recording)
    assert await namespace["answer"](MemorySession(SCOPE, "c1"), "I moved to Lisbon.") == "Noted."
    await namespace["answer"](MemorySession(SCOPE, "c2"), "Where do I live?")
    check_remembered(str(prompts[-1][0].content))


def _lc_call(args: dict[str, Any]) -> Any:
    return {"name": "memory_save", "args": args, "id": "call-1", "type": "tool_call"}


async def test_anthropic(store) -> None:
    requests: list[dict[str, Any]] = []

    def answer_request(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        requests.append(body)
        step = len(requests)
        if step == 1:
            content = [_tool_use({"content": OLD, "kind": "profile"})]
        elif step == 2:
            old_id = saved_id(body["messages"][-1]["content"][0]["content"])
            content = [_tool_use({"content": NEW, "kind": "profile", "supersedes": old_id})]
        else:
            content = [{"type": "text", "text": "Noted."}]
        stop = "tool_use" if content[0]["type"] == "tool_use" else "end_turn"
        return httpx2.Response(200, json=_message(content, stop))

    client = AsyncAnthropic(
        api_key="test",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer_request)),
        max_retries=0,
    )
    namespace = run_snippet("Anthropic SDK", store=store, model="claude-test", client=client)
    assert await namespace["answer"](MemorySession(SCOPE, "c1"), "I moved to Lisbon.") == "Noted."
    await namespace["answer"](MemorySession(SCOPE, "c2"), "Where do I live?")
    check_remembered(requests[-1]["system"])


@pytest.mark.slow
async def test_anthropic_memory_tool(store) -> None:
    path = "/memories/profile.md"
    script = [
        {"command": "create", "path": path, "file_text": f"# Profile\n{OLD}\n"},
        {"command": "str_replace", "path": path, "old_str": OLD, "new_str": NEW},
        None,
        {"command": "view", "path": path},
        None,
    ]
    requests: list[dict[str, Any]] = []

    def answer_request(request: httpx2.Request) -> httpx2.Response:
        requests.append(json.loads(request.content))
        step = script[len(requests) - 1]
        if step is None:
            return httpx2.Response(
                200, json=_message([{"type": "text", "text": "Noted."}], "end_turn")
            )
        block = {
            "type": "tool_use",
            "id": f"toolu_{len(requests)}",
            "name": "memory",
            "input": step,
        }
        return httpx2.Response(200, json=_message([block], "tool_use"))

    client = AsyncAnthropic(
        api_key="test",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer_request)),
        max_retries=0,
    )
    namespace = run_snippet(
        "Anthropic memory tool", store=store, model="claude-test", client=client
    )
    assert await namespace["answer"](SCOPE, "I moved to Lisbon.") == "Noted."
    await namespace["answer"](SCOPE, "Where do I live?")
    assert requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    viewed = requests[-1]["messages"][-1]["content"][0]
    assert viewed["type"] == "tool_result"
    assert NEW in str(viewed["content"])
    assert OLD not in str(viewed["content"])
    hits = await store.search(MemorySearchQuery(target_key=path, include_invalidated=True))
    assert [hit.record.is_invalidated for hit in hits] == [False, True]  # the audit trail
    other = await store.search(MemorySearchQuery(scope={"user": "u2"}, target_key=path))
    assert other == []


def _tool_use(args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": "memory_save", "input": args}


def _message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
