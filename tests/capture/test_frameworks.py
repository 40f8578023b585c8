"""The frameworks' own message types through capture: pydantic-ai, LangChain, ADK, Anthropic."""

from __future__ import annotations

from datetime import UTC, datetime

from anthropic.types import Message, TextBlock, ToolUseBlock, Usage
from google.adk.events.event import Event
from google.genai import types
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from recallstore import capture
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.capture import read_transcript

SCOPE = {"user": "u1"}
WHEN = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def test_pydantic_ai_messages() -> None:
    transcript = [
        ModelRequest(
            parts=[
                SystemPromptPart("Be brief.", timestamp=WHEN),
                UserPromptPart("I moved to Lisbon.", timestamp=WHEN),
            ]
        ),
        ModelResponse(
            parts=[TextPart("Noted"), ToolCallPart("memory_search", {"query": "x"})], timestamp=WHEN
        ),
        ModelRequest(parts=[ToolReturnPart("memory_search", {"ok": True}, timestamp=WHEN)]),
        ModelResponse(parts=[TextPart("Enjoy Lisbon!")], timestamp=WHEN),
    ]
    messages = read_transcript(transcript)
    assert [(m.index, m.part, m.role, m.tool) for m in messages] == [
        (0, 0, "system", False),
        (0, 1, "user", False),
        (1, 0, "assistant", False),
        (1, 1, "assistant", True),
        (2, 0, "tool", True),
        (3, 0, "assistant", False),
    ]
    assert messages[1].text == "I moved to Lisbon."
    assert messages[1].time == WHEN
    assert messages[3].text == 'memory_search({"query": "x"})'


def test_langchain_messages() -> None:
    transcript = [
        SystemMessage("Be brief."),
        HumanMessage([{"type": "text", "text": "I moved"}, "to Lisbon."]),
        AIMessage("", tool_calls=[{"name": "memory_save", "args": {"content": "x"}, "id": "1"}]),
        ToolMessage("saved", tool_call_id="1"),
        AIMessage("Welcome to Lisbon.", name="guide"),
    ]
    messages = read_transcript(transcript)
    assert [(m.index, m.role, m.text, m.tool) for m in messages] == [
        (0, "system", "Be brief.", False),
        (1, "user", "I moved\nto Lisbon.", False),
        (2, "assistant", 'memory_save({"content": "x"})', True),
        (3, "tool", "saved", True),
        (4, "assistant", "Welcome to Lisbon.", False),
    ]
    assert messages[-1].name == "guide"


def test_adk_events_are_named_by_their_id() -> None:
    events = [
        Event(
            id="e1",
            invocation_id="i",
            author="user",
            timestamp=WHEN.timestamp(),
            content=types.Content(role="user", parts=[types.Part(text="I moved to Lisbon.")]),
        ),
        Event(
            id="e2",
            invocation_id="i",
            author="travel_agent",
            timestamp=WHEN.timestamp(),
            content=types.Content(
                role="model",
                parts=[
                    types.Part(text="thinking...", thought=True),
                    types.Part(text="Lovely city."),
                    types.Part(function_call=types.FunctionCall(name="f", args={"a": 1})),
                ],
            ),
        ),
    ]
    messages = read_transcript(events)
    assert [(m.id, m.role, m.name, m.text, m.tool) for m in messages] == [
        ("e1", "user", None, "I moved to Lisbon.", False),
        ("e2", "assistant", "travel_agent", "Lovely city.", False),
        ("e2", "assistant", "travel_agent", 'f({"a": 1})', True),
    ]
    assert messages[0].time == WHEN


async def test_adk_events_added_in_pieces_are_stored_once() -> None:
    events = [
        Event(
            id=f"e{n}",
            invocation_id="i",
            author="user",
            content=types.Content(role="user", parts=[types.Part(text=f"Fact {n}.")]),
        )
        for n in range(4)
    ]
    async with InMemoryMemoryStore() as store:
        first = await capture(store, SCOPE, events[:3], conversation_id="s1")
        piece = await capture(store, SCOPE, events[2:], conversation_id="s1")
        assert (first.added, piece.added) == (3, 1)
        assert isinstance(piece.records[0].payload, dict)
        assert piece.records[0].payload["message_id"] == "e2"


def test_anthropic_sdk_message_objects() -> None:
    response = Message(
        id="m1",
        type="message",
        role="assistant",
        model="claude",
        content=[
            TextBlock(type="text", text="Checking."),
            ToolUseBlock(type="tool_use", id="t", name="memory_search", input={"query": "home"}),
        ],
        stop_reason="tool_use",
        usage=Usage(input_tokens=1, output_tokens=1),
    )
    messages = read_transcript([{"role": "user", "content": "Hi"}, response])
    assert [(m.role, m.text, m.tool) for m in messages] == [
        ("user", "Hi", False),
        ("assistant", "Checking.", False),
        ("assistant", 'memory_search({"query": "home"})', True),
    ]
