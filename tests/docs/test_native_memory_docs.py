"""The snippets of docs/native-memory.md run as written, with each framework's real loop.

Each snippet is executed in a fresh directory (it opens ``memory.db`` there) with the
``model`` the page says the reader brings; conversation 1 saves a fact and corrects it
with ``supersedes``, conversation 2's system prompt holds the correction and not the
superseded fact. tests/docs/test_snippet_types.py type-checks them (mypy --strict).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agno.models.anthropic import Claude
from claude_agent_sdk import ClaudeAgentOptions
from strands import Agent
from tests.adapters._fake_claude_api import FakeClaudeApi, fake_claude_api, say, system_text, use
from tests.adapters.test_strands import Scripted
from tests.adapters.test_strands import say as strands_say
from tests.adapters.test_strands import use as strands_use
from tests.docs.test_integrations import NEW, OLD, check_remembered

from recallstore.adapters._session import MemorySession

DOC = Path(__file__).resolve().parents[2] / "docs" / "native-memory.md"
SCOPE = {"tenant": "acme", "user": "u_42"}
MAX_LINES = 10
"""Glue lines a snippet may have, imports and the store's opening included (issue 40)."""


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def run_block(index: int, **given: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = dict(given)
    exec(compile(blocks()[index], f"{DOC.name}[{index}]", "exec"), namespace)
    return namespace


def saved_id(result: Any) -> str:
    assert result["ok"] is True, result
    return str(result["memory"]["id"])


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def api() -> Iterator[FakeClaudeApi]:
    with fake_claude_api() as running:
        yield running


def test_every_snippet_is_short() -> None:
    assert len(blocks()) == 4
    for index, code in enumerate(blocks()):
        lines = [line for line in code.splitlines() if line.strip()]
        assert len(lines) <= MAX_LINES, f"snippet {index}: {len(lines)} lines"


async def test_strands(here) -> None:
    first = Scripted(
        [
            strands_use("memory_save", {"content": OLD, "kind": "profile"}),
            strands_use(
                "memory_save",
                lambda r: {"content": NEW, "kind": "profile", "supersedes": saved_id(r)},
            ),
            strands_say("Noted."),
        ]
    )
    answer = run_block(0, model=first)["answer"]
    assert (await answer(MemorySession(SCOPE, "c-1"), "I moved to Lisbon.")).strip() == "Noted."
    second = Scripted([strands_say("Lisbon.")])
    answer = run_block(0, model=second)["answer"]
    await answer(MemorySession(SCOPE, "c-2"), "Where do I live?")
    check_remembered(second.system_prompts[0])


def test_strands_sync(here) -> None:
    first = Scripted(
        [
            strands_use("memory_save", {"content": OLD, "kind": "profile"}),
            strands_use(
                "memory_save",
                lambda r: {"content": NEW, "kind": "profile", "supersedes": saved_id(r)},
            ),
            strands_say("Noted."),
        ]
    )
    namespace = run_block(1, model=first)
    try:
        second = Scripted([strands_say("Lisbon.")])
        manager = namespace["memory"].manager(MemorySession(SCOPE, "c-2"))
        assert str(Agent(model=second, memory_manager=manager)("Where do I live?")) == "Lisbon.\n"
        check_remembered(second.system_prompts[0])
    finally:
        namespace["store"].close()


def test_agno_sync_and_async(here, api) -> None:
    api.play(
        [
            use("memory_save", {"content": OLD, "kind": "profile"}),
            use(
                "memory_save",
                lambda r: {"content": NEW, "kind": "profile", "supersedes": saved_id(r)},
            ),
            say("Noted."),
        ]
    )
    model = Claude(id="claude-sonnet-4-5", api_key="sk-test", client_params={"base_url": api.url})
    namespace = run_block(2, model=model)
    try:
        api.play([say("Lisbon.")])
        namespace["agent"].run("Where do I live?", user_id="u_42", session_id="c-2")
        check_remembered(system_text(api.requests[-1]))
        api.play([say("Still Lisbon.")])
        out = asyncio.run(
            namespace["agent"].arun("Where do I live now?", user_id="u_42", session_id="c-3")
        )
        assert out.content == "Still Lisbon."
        check_remembered(system_text(api.requests[-1]))
    finally:
        namespace["store"].close()


@pytest.mark.slow  # starts the Claude Code CLI twice
async def test_claude_agent_sdk(here, api) -> None:
    (here / "home").mkdir()
    options = ClaudeAgentOptions(
        model="claude-sonnet-4-5",
        cwd=here,
        env=api.env(here / "home"),
        max_turns=8,
        setting_sources=[],
    )
    save = "mcp__memory__memory_save"
    api.play(
        [
            use(save, {"content": OLD, "kind": "profile"}),
            use(save, lambda r: {"content": NEW, "kind": "profile", "supersedes": saved_id(r)}),
            say("Noted."),
        ]
    )
    answer = run_block(3)["answer"]
    assert await answer(MemorySession(SCOPE, "c-1"), "I moved to Lisbon.", options) == "Noted."
    api.play([say("Lisbon.")])
    assert await answer(MemorySession(SCOPE, "c-2"), "Where do I live?", options) == "Lisbon."
    check_remembered(system_text(api.requests[-1]))
