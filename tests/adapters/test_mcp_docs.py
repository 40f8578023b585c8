"""Every snippet of docs/adapters.md runs: the command lines, the client configuration,
the pydantic-ai and official-client code, the in-process server, and the model-facing
answers it shows are the real ones."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from pydantic_ai.models.test import TestModel

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.prompt import RECALL_OPEN, Manual
from recallstore.records import MemoryWriteInput
from recallstore.toolbox import MemoryToolbox
from recallstore.toolset import MEMORY_TOOLS

DOC = Path(__file__).resolve().parents[2] / "docs" / "adapters.md"
TIMEOUT = 60


def blocks(language: str) -> list[str]:
    """The fenced blocks of the page in ``language`` ("" for unlabelled ones), in order."""
    fenced = re.findall(r"^```(\w*)\n(.*?)^```$", DOC.read_text(encoding="utf-8"), re.S | re.M)
    return [body for label, body in fenced if label == language]


def as_python_module(argv: list[str]) -> tuple[str, list[str]]:
    """A documented ``recallstore …`` command, run by this interpreter."""
    assert Path(argv[0]).name == "recallstore"
    return sys.executable, ["-m", "recallstore", *argv[1:]]


async def tool_names(command: str, args: list[str], cwd: Path) -> list[str]:
    params = StdioServerParameters(command=command, args=args, cwd=str(cwd))
    with anyio.fail_after(TIMEOUT):
        async with Client(params) as client:
            return [tool.name for tool in (await client.list_tools()).tools]


@pytest.mark.slow
async def test_the_command_line_serves(tmp_path: Path) -> None:
    (command_line,) = blocks("bash")
    command, args = as_python_module(shlex.split(command_line))
    assert await tool_names(command, args, tmp_path) == [spec.name for spec in MEMORY_TOOLS]


@pytest.mark.slow
async def test_the_client_configuration_serves(tmp_path: Path) -> None:
    (config,) = (block for block in blocks("json") if "mcpServers" in block)
    server = json.loads(config)["mcpServers"]["memory"]
    args = [str(tmp_path / "m.db") if arg.endswith("memory.db") else arg for arg in server["args"]]
    command, args = as_python_module([server["command"], *args])
    assert await tool_names(command, args, tmp_path) == [spec.name for spec in MEMORY_TOOLS]


def test_the_http_sample_output_is_the_real_format() -> None:
    sample = next(block for block in blocks("") if "MCP endpoint" in block)
    lines = sample.splitlines()
    assert lines[0].startswith("$ recallstore mcp --http")
    assert re.fullmatch(r"MCP endpoint: http://127\.0\.0\.1:\d+/mcp", lines[1])
    assert lines[2].startswith("Authorization: Bearer ")
    assert lines[3] == "Press Ctrl+C to stop."


@pytest.mark.slow
async def test_the_python_snippets_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        await store.write(
            [
                MemoryWriteInput(
                    scope={"tenant": "acme", "user": "u1"}, content="Is planning a trip to Kyoto."
                )
            ]
        )
    pydantic_ai, instructions, official, in_process = blocks("python")
    namespace: dict[str, Any] = {"model": TestModel(), "user_id": "u1"}
    for snippet in (pydantic_ai, instructions, official, in_process):
        exec(compile(snippet, str(DOC), "exec"), namespace)

    with anyio.fail_after(TIMEOUT):
        async with namespace["agent"]:
            result = await namespace["agent"].run("Remember that I like tea.")
        context = await namespace["memory_instructions"]("trip to Kyoto")
        first_turn = await namespace["first_turn_context"]("trip to Kyoto")
        remembered = await namespace["remembered"]("u1", "c1")
    assert isinstance(result.output, str)
    assert context.startswith(Manual.render())
    assert RECALL_OPEN in context
    assert "Kyoto" in context
    # first_turn_context serves --scope user=u1 alone: a subset of the {tenant, user} scope.
    assert "Kyoto" in first_turn
    assert "Is planning a trip to Kyoto." in remembered


async def test_the_error_answer_shown_is_the_real_one(tmp_path: Path) -> None:
    (shown,) = (block for block in blocks("json") if '"not_found"' in block)
    async with SqliteMemoryStore(tmp_path / "m.db") as store:
        real = await MemoryToolbox(store, {"user": "u1"}).call("memory_invalidate", {"id": "x"})
    assert json.loads(shown) == real
