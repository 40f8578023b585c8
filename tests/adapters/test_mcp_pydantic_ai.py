"""pydantic-ai, with its default settings, connected to ``recallstore mcp`` over stdio.

A model's honest mistake (an unknown id) is an MCP ``isError`` result. pydantic-ai's
default turns it into a retry and gives up after one; with the documented
``tool_error_behavior="failed"`` the model reads each mistake and the run carries on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

TIMEOUT = 60


def recallstore_mcp(db: Path) -> MCPToolset[None]:
    """The toolset docs/adapters.md shows: ``recallstore mcp`` over stdio, failures seen."""
    return MCPToolset(
        StdioTransport(
            command=sys.executable,
            args=["-m", "recallstore", "mcp", "--db", str(db), "--scope", "user=u1"],
        ),
        tool_error_behavior="failed",
    )


def tool_returns(messages: list[ModelMessage]) -> list[tuple[str, dict[str, Any]]]:
    """Each tool result the model was shown: (tool name, the JSON object).

    A failed result (a model mistake) reaches the model as the JSON text, and only a
    mistake is marked failed.
    """
    returns: list[tuple[str, dict[str, Any]]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    raw = part.content
                    content: Any = json.loads(raw) if isinstance(raw, str) else raw
                    assert isinstance(content, dict)
                    assert (part.outcome == "failed") is (content["ok"] is False)
                    returns.append((part.tool_name, dict(content)))
    return returns


@pytest.mark.slow
async def test_two_consecutive_not_found_results_do_not_end_the_run(tmp_path: Path) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(message, ModelResponse) for message in messages)
        if turn < 2:
            # Two honest mistakes in a row: ids that do not exist.
            return ModelResponse(
                parts=[ToolCallPart("memory_invalidate", {"id": f"no-such-id-{turn}"})]
            )
        return ModelResponse(parts=[TextPart("Nothing to forget.")])

    agent = Agent(FunctionModel(model), toolsets=[recallstore_mcp(tmp_path / "memory.db")])
    with anyio.fail_after(TIMEOUT):
        async with agent:
            result = await agent.run("Forget where I live.")
    assert result.output == "Nothing to forget."
    returns = tool_returns(result.all_messages())
    assert [name for name, _ in returns] == ["memory_invalidate"] * 2
    for _, content in returns:
        assert content["ok"] is False
        assert content["error"]["code"] == "not_found"


@pytest.mark.slow
async def test_a_saved_memory_is_found_in_the_same_run(tmp_path: Path) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(message, ModelResponse) for message in messages)
        if turn == 0:
            return ModelResponse(parts=[ToolCallPart("memory_save", {"content": "Likes tea."})])
        if turn == 1:
            return ModelResponse(parts=[ToolCallPart("memory_search", {"query": "tea"})])
        return ModelResponse(parts=[TextPart("Saved.")])

    agent = Agent(FunctionModel(model), toolsets=[recallstore_mcp(tmp_path / "memory.db")])
    with anyio.fail_after(TIMEOUT):
        async with agent:
            result = await agent.run("I like tea.")
    (_, saved), (_, searched) = tool_returns(result.all_messages())
    assert saved["ok"] is True
    assert [m["id"] for m in searched["memories"]] == [saved["memory"]["id"]]
