"""The Claude Agent SDK adapter, driven by the SDK's real agent loop, offline.

``query()`` starts the Claude Code CLI bundled in the SDK's wheel, which talks to a
scripted Messages API on 127.0.0.1 (tests/adapters/_fake_claude_api.py): the memory
tools run in the in-process SDK MCP server, the hooks in this process, as in production.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
from tests.adapters._fake_claude_api import (
    FakeClaudeApi,
    fake_claude_api,
    result_json,
    result_text,
    say,
    system_text,
    tool_results,
    use,
)

from recallstore.adapters.claude_agent_sdk import ClaudeAgentMemory, MemorySession
from recallstore.errors import ConfigurationError
from recallstore.records import MemorySearchQuery

pytestmark = pytest.mark.slow  # each conversation starts the Claude Code CLI


@pytest.fixture
def api() -> Iterator[FakeClaudeApi]:
    with fake_claude_api() as running:
        yield running


@pytest.fixture
def base(api: FakeClaudeApi, tmp_path: Path) -> ClaudeAgentOptions:
    (tmp_path / "home").mkdir()
    return ClaudeAgentOptions(
        model="claude-sonnet-4-5",
        system_prompt="You plan trips.",
        cwd=tmp_path,
        env=api.env(tmp_path / "home"),
        max_turns=8,
        setting_sources=[],
    )


async def talk(options: ClaudeAgentOptions, text: str) -> str:
    result = ""
    async for message in query(prompt=text, options=options):
        if isinstance(message, ResultMessage):
            result = message.result or ""
    return result


def results(api: FakeClaudeApi) -> list[tuple[bool, str]]:
    """(is_error, text) of every tool result the CLI sent back to the model."""
    return [
        (bool(block.get("is_error")), result_text(block))
        for body in api.requests
        for block in tool_results(body)
    ]


SAVE = "mcp__memory__memory_save"


async def test_two_conversations(capability, story, api, base) -> None:
    memory = ClaudeAgentMemory(capability)
    session = MemorySession(story.scope, "conv-1")
    api.play(
        [
            use(SAVE, story.save_old()),
            use(SAVE, lambda result: story.save_new(story.saved_id(result))),
            say("Noted."),
        ]
    )
    text = "I live in Porto. No, Lisbon!"
    assert await talk(await memory.options(session, text, base), text) == "Noted."
    assert [error for error, _ in results(api)] == [False, False]
    prompts = {system_text(body) for body in api.requests}
    assert len(prompts) == 1  # the same system prompt on every call
    saved = await story.store.search(
        MemorySearchQuery(scope=story.scope, include_invalidated=True, kinds=("profile",))
    )
    records = {hit.record.content: hit.record for hit in saved}
    assert records[story.old].superseded_by == records[story.new].id

    api.play([say("You live in Lisbon.")])
    session2 = MemorySession(story.scope, "conv-2")
    question = "Where do I live?"
    assert await talk(await memory.options(session2, question, base), question) == (
        "You live in Lisbon."
    )
    system = system_text(api.requests[-1])
    assert "You plan trips." in system
    story.check_recalled(system)


async def test_other_user_scope_and_mistakes(capability, story, api, base) -> None:
    memory = ClaudeAgentMemory(capability)
    await capability.toolbox(story.scope).call("memory_save", story.save_old())
    api.play(
        [
            use("mcp__memory__memory_search", {"query": "Porto", "scope": story.scope}),
            use("mcp__memory__memory_invalidate", {"id": "no-such-id"}),
            use("mcp__memory__memory_search", {"query": "Porto"}),
            say("Nothing known."),
        ]
    )
    session = MemorySession(story.other, "conv-9")
    text = "Do I live in Porto?"
    assert await talk(await memory.options(session, text, base), text) == "Nothing known."
    story.check_nothing_recalled(system_text(api.requests[0]))
    (scope_error, refused), (missing_error, missing), (ok_error, found) = results(api)
    assert (scope_error, missing_error, ok_error) == (True, True, False)
    assert "scope" in refused  # refused before the store: no other scope was read
    assert "not_found" in missing
    story.check_empty(result_json(found))


async def test_a_conversation_nothing_saved_is_captured_once_and_recalled(
    capability, story, api, base
) -> None:
    memory = ClaudeAgentMemory(capability)
    session = MemorySession(story.scope, "conv-1")
    api.play([say("What a lovely name.")])
    await talk(await memory.options(session, story.told, base), story.told)
    # The Stop hook captured the conversation: the prompt and the final answer.
    hits = await story.store.search(MemorySearchQuery(scope=story.scope, limit=100))
    await story.check_captured("conv-1", len(hits))
    assert {hit.record.content for hit in hits} == {
        f"user: {story.told}",
        "assistant: What a lovely name.",
    }
    again = await memory.capture(session, memory.transcript(session))
    assert again.added == 0
    assert again.messages == 2

    api.play([say("Miso.")])
    session2 = MemorySession(story.scope, "conv-2")
    await talk(await memory.options(session2, story.asked, base), story.asked)
    story.check_told_recalled(system_text(api.requests[-1]))


async def test_without_the_first_prompt_the_hook_gives_the_recall(
    capability, story, api, base
) -> None:
    memory = ClaudeAgentMemory(capability)
    await capability.toolbox(story.scope).call("memory_save", {"content": story.new})
    api.play([say("Lisbon.")])
    options = await memory.options(MemorySession(story.scope, "conv-3"), None, base)
    assert options.system_prompt == "You plan trips."
    await talk(options, "Where do I live?")
    sent = str(api.requests[0]["messages"])
    assert story.new in sent  # the UserPromptSubmit hook's additionalContext


def test_a_session_missing_a_scope_field_is_refused(capability) -> None:
    memory = ClaudeAgentMemory(capability)
    with pytest.raises(ConfigurationError, match="tenant"):
        memory.server(MemorySession({"user": "u1"}, "conv-1"))


def test_the_tools_are_named_as_claude_code_names_them(capability) -> None:
    memory: Any = ClaudeAgentMemory(capability)
    assert memory.tool_names == [f"mcp__memory__{spec.name}" for spec in capability.specs]
