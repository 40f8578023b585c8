"""The Anthropic adapter, driven by the real SDK client against recorded responses, offline.

The client is the SDK's own ``AsyncAnthropic``; its HTTP transport answers with recorded
Messages API responses (``tool_use`` blocks, then text), so every request body the SDK
would send (system prompt, tools, ``tool_result`` blocks) is what the test inspects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import httpx2
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import MessageParam, ToolUseBlock

from recallstore.adapters.anthropic import AnthropicMemory, MemorySession
from recallstore.tools import anthropic_tool

Reply = dict[str, Any] | Callable[[], dict[str, Any]]


def tool_use(name: str, arguments: dict[str, Any], n: int = 1) -> dict[str, Any]:
    return _message(
        [{"type": "tool_use", "id": f"toolu_{n:02d}", "name": name, "input": arguments}],
        "tool_use",
    )


def text(words: str) -> dict[str, Any]:
    return _message([{"type": "text", "text": words}], "end_turn")


def _message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    """A Messages API response as the API records it."""
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


class Recorded:
    """An AsyncAnthropic client answered by ``replies``; ``requests`` holds the bodies sent."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        transport = httpx2.MockTransport(self._answer)
        self.client = AsyncAnthropic(
            api_key="test-key", http_client=httpx2.AsyncClient(transport=transport), max_retries=0
        )

    def _answer(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        reply = self.replies.pop(0)
        return httpx2.Response(200, json=reply() if callable(reply) else reply)

    def tool_results(self, index: int = -1) -> list[dict[str, Any]]:
        """The tool_result blocks of request ``index``'s last (user) message."""
        content = self.requests[index]["messages"][-1]["content"]
        return [block for block in content if block["type"] == "tool_result"]


async def converse(
    recorded: Recorded, memory: AnthropicMemory, session: MemorySession, user_text: str
) -> str:
    """The loop a user writes: system prompt once, memory tool results fed back."""
    system = await memory.system(session, user_text)
    messages: list[MessageParam] = [{"role": "user", "content": user_text}]
    while True:
        response = await recorded.client.messages.create(
            model="claude-test",
            max_tokens=512,
            system=system,
            tools=memory.tools,
            messages=messages,
        )
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return "".join(block.text for block in response.content if block.type == "text")
        messages.append(
            {"role": "user", "content": await memory.tool_results(session, response.content)}
        )


def result_of(block: Mapping[str, Any]) -> Any:
    return json.loads(block["content"])


async def test_two_conversations(capability, story) -> None:
    memory = AnthropicMemory(capability)
    first: Recorded
    first = Recorded(
        [
            tool_use("memory_save", story.save_old(), 1),
            lambda: tool_use(
                "memory_save", story.save_new(story.saved_id(result_of(first.tool_results()[0]))), 2
            ),
            text("Noted."),
        ]
    )
    session = MemorySession(story.scope, "conv-1")
    assert await converse(first, memory, session, "I live in Porto. No, Lisbon!") == "Noted."
    assert first.requests[0]["tools"] == [anthropic_tool(spec) for spec in capability.specs]
    assert [block["is_error"] for block in first.tool_results(1) + first.tool_results(2)] == [
        False,
        False,
    ]
    await story.check_saved_and_superseded("conv-1")

    second = Recorded([text("Lisbon.")])
    session2 = MemorySession(story.scope, "conv-2")
    await converse(second, memory, session2, "Where do I live?")
    story.check_recalled(second.requests[0]["system"])

    await capability.toolbox(story.scope).call("memory_save", {"content": "Likes tea."})
    assert await memory.system(session2, "Where do I live?") == second.requests[0]["system"]


async def test_scope_from_the_model_is_refused(capability, story) -> None:
    await capability.toolbox(story.other).call("memory_save", {"content": "U2 secret."})
    recorded = Recorded(
        [
            tool_use("memory_list", {"scope": story.other}, 1),
            tool_use("memory_list", {}, 2),
            text("ok"),
        ]
    )
    await converse(recorded, AnthropicMemory(capability), MemorySession(story.scope, "c"), "Hi")
    [refused] = recorded.tool_results(1)
    [listed] = recorded.tool_results(2)
    assert refused["is_error"] is True
    assert refused["tool_use_id"] == "toolu_01"
    story.check_refused_scope(result_of(refused))
    assert listed["is_error"] is False
    story.check_empty(result_of(listed))


async def test_another_user_sees_nothing(capability, story) -> None:
    await capability.toolbox(story.scope).call(
        "memory_save", {"content": story.new, "kind": "profile"}
    )
    recorded = Recorded([tool_use("memory_search", {"query": "Lisbon"}), text("Nothing.")])
    await converse(
        recorded, AnthropicMemory(capability), MemorySession(story.other, "c9"), "Lisbon?"
    )
    story.check_nothing_recalled(recorded.requests[0]["system"])
    story.check_empty(result_of(recorded.tool_results(1)[0]))


async def test_not_found_is_an_error_result(capability, story) -> None:
    recorded = Recorded(
        [
            tool_use("memory_invalidate", {"id": "no-such-id"}, 1),
            tool_use("memory_invalidate", {"id": "nor-this-one"}, 2),
            text("Could not find them."),
        ]
    )
    session = MemorySession(story.scope, "conv-1")
    assert await converse(recorded, AnthropicMemory(capability), session, "Forget") == (
        "Could not find them."
    )
    for index in (1, 2):
        [block] = recorded.tool_results(index)
        assert block["is_error"] is True
        assert result_of(block)["error"]["code"] == "not_found"


async def test_other_tools_are_left_to_the_host(capability, story) -> None:
    memory = AnthropicMemory(capability)
    content = [
        ToolUseBlock(type="tool_use", id="toolu_a", name="get_weather", input={"city": "Lisbon"}),
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_b", "name": "memory_list", "input": {}},
    ]
    [block] = await memory.tool_results(MemorySession(story.scope, "c"), content)
    assert block["tool_use_id"] == "toolu_b"
    assert block["is_error"] is False


@pytest.mark.parametrize("bad_input", [None, "not json", {"limit": 0}])
async def test_malformed_input_is_an_error_result(capability, story, bad_input: Any) -> None:
    block = {"type": "tool_use", "id": "toolu_x", "name": "memory_list", "input": bad_input}
    memory = AnthropicMemory(capability)
    results = await memory.tool_results(MemorySession(story.scope, "c"), [block])
    if bad_input is None:  # no input: every argument has a default
        assert results[0]["is_error"] is False
    else:
        assert results[0]["is_error"] is True
        assert result_of(results[0])["error"]["code"] == "invalid_arguments"


async def test_the_end_of_conversation_hook_keeps_what_no_tool_saved(capability, story) -> None:
    memory = AnthropicMemory(capability)
    first = Recorded([text("What a lovely name.")])
    session = MemorySession(story.scope, "conv-1")
    messages: list[MessageParam] = [{"role": "user", "content": story.told}]
    response = await first.client.messages.create(
        model="claude-test",
        max_tokens=512,
        system=await memory.system(session, story.told),
        tools=memory.tools,
        messages=messages,
    )
    messages.append({"role": "assistant", "content": response.content})
    await story.check_nothing_saved()

    captured = await memory.capture(session, messages)
    await story.check_captured("conv-1", captured.added)
    assert (await memory.capture(session, messages)).added == 0

    second = Recorded([text("Miso.")])
    await converse(second, memory, MemorySession(story.scope, "conv-2"), story.asked)
    story.check_told_recalled(second.requests[0]["system"])
