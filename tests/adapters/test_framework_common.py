"""What every framework adapter shares: lazy imports that name the install command, and the
host's session, whose conversation's instructions are computed once."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from recallstore.adapters import _session
from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import MemorySession, _Conversations
from recallstore.capability import MemoryCapability
from recallstore.errors import ConfigurationError, MissingDependencyError

ADAPTERS = {
    # adapter module: (a module of its framework, the extra)
    "pydantic_ai": ("pydantic_ai", "pydantic-ai"),
    "openai_agents": ("agents", "openai-agents"),
    "adk": ("google.adk", "adk"),
    "langchain": ("langchain_core", "langchain"),
    "langgraph": ("langgraph", "langgraph"),
    "anthropic": ("anthropic", "anthropic"),
    "strands": ("strands", "strands"),
    "agno": ("agno", "agno"),
    "claude_agent_sdk": ("claude_agent_sdk", "claude-agent-sdk"),
    "agent_framework": ("agent_framework", "agent-framework"),
    "llama_index": ("llama_index", "llama-index"),
    "crewai": ("crewai", "crewai"),
}
OWN_ENVIRONMENT = {"crewai": ".venv-crewai"}
"""Extras whose framework pins clash with the dev extra's (CrewAI needs mcp<2): the
Makefile installs each in an environment of its own and `make test` runs its tests there."""


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_a_missing_framework_names_the_install_command(
    adapter: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    framework, extra = ADAPTERS[adapter]
    module = f"recallstore.adapters.{adapter}"
    monkeypatch.delitem(sys.modules, module, raising=False)
    # As if it were not installed: its modules already imported by other tests too.
    for name in [framework, *(m for m in sys.modules if m.startswith(f"{framework}."))]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingDependencyError) as caught:
        importlib.import_module(module)
    assert caught.value.install_command == f"pip install 'recallstore[{extra}]'"
    assert f"pip install 'recallstore[{extra}]'" in str(caught.value)


@pytest.mark.slow
def test_recallstore_imports_no_framework() -> None:
    code = (
        "import sys, recallstore, recallstore.adapters, recallstore.capability\n"
        f"print(sorted(m for m in {sorted(f for f, _ in ADAPTERS.values())!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_dev_extra_installs_every_framework() -> None:
    pyproject = tomllib.loads(
        (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    )
    extras = pyproject["project"]["optional-dependencies"]
    in_dev = {
        name.strip()
        for requirement in extras["dev"]
        if (found := re.fullmatch(r"recallstore\[(.*)\]", requirement))
        for name in found.group(1).split(",")
    }
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text(encoding="utf-8")
    for _, extra in ADAPTERS.values():
        assert extras[extra], extra
        if extra in OWN_ENVIRONMENT:
            assert extra not in in_dev, extra
            assert f"{OWN_ENVIRONMENT[extra]}/.installed" in makefile, extra
            assert f".[{extra}," in makefile, extra
        else:
            assert extra in in_dev, extra


def test_an_import_error_inside_an_installed_framework_is_not_hidden() -> None:
    with (
        pytest.raises(ImportError) as caught,
        _framework_imports("pydantic_ai", "the pydantic-ai adapter", "pydantic-ai"),
    ):
        importlib.import_module("recallstore_no_such_module")
    assert not isinstance(caught.value, MissingDependencyError)


@pytest.mark.parametrize("conversation_id", ["", "  ", None])
def test_a_session_needs_a_conversation_id(conversation_id: object) -> None:
    with pytest.raises(ConfigurationError, match="conversation_id"):
        MemorySession({"user": "u1"}, conversation_id)  # type: ignore[arg-type]


def test_an_adapter_needs_a_capability(store) -> None:
    with pytest.raises(ConfigurationError, match="MemoryCapability"):
        _Conversations(store)


async def test_instructions_are_kept_for_the_most_recent_conversations(
    capability: MemoryCapability, story, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_session, "_MAX_CONVERSATIONS", 2)
    conversations = _Conversations(capability)
    toolbox = capability.toolbox(story.scope)
    first = {
        cid: await conversations.instructions(MemorySession(story.scope, cid), "Hi")
        for cid in ("c1", "c2")
    }
    await toolbox.call("memory_save", story.save_old())
    # c2 is still kept; c3 pushes c1 out, so c1 is computed again, now with the new memory.
    assert await conversations.instructions(MemorySession(story.scope, "c2"), "Hi") == first["c2"]
    await conversations.instructions(MemorySession(story.scope, "c3"), "Hi")
    again = await conversations.instructions(MemorySession(story.scope, "c1"), "Hi")
    assert story.old not in first["c1"]
    assert story.old in again
    # The same conversation id in another scope is another conversation.
    other = await conversations.instructions(MemorySession(story.other, "c1"), "Hi")
    assert story.old not in other
