"""docs/framework-adapters.md: each snippet is short and runs, with its framework's own
agent loop and a scripted model, offline.

Conversation 1 saves a fact and corrects it with ``supersedes``; conversation 2's system
prompt holds the correction and not the superseded fact; what conversation 1 said is
captured (after each run, or when the LlamaIndex conversation ends).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.adapters import _agent_framework_model as maf
from tests.adapters import _llama_index_model as li
from tests.docs._framework_adapters_page import DOC, MAX_LINES, snippets

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.prompt import RECALL_CLOSE
from recallstore.records import MemorySearchQuery

# llama-index-workflows lists the agent's members (inspect.getmembers), touching pydantic's
# deprecated attributes: its warnings, not ours.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

OLD, NEW = "Lives in Porto.", "Lives in Lisbon."


def converse(heading: str, **given: Any) -> Any:
    namespace: dict[str, Any] = dict(given)
    exec(compile(snippets()[heading], f"{DOC.name}: {heading}", "exec"), namespace)
    return namespace["converse"]


def test_each_snippet_is_at_most_ten_lines() -> None:
    found = snippets()
    # CrewAI's is run by tests/adapters/crewai/test_crewai_doc.py, in .venv-crewai.
    assert set(found) == {"Microsoft Agent Framework", "LlamaIndex", "CrewAI"}
    for heading, code in found.items():
        lines = [line for line in code.splitlines() if line.strip()]
        assert len(lines) <= MAX_LINES, f"{heading}: {len(lines)} lines"


def check_remembered(system: str | None) -> None:
    assert system is not None
    assert RECALL_CLOSE in system
    assert NEW in system
    assert OLD not in system


async def check_captured(tmp_path: Path, said: str) -> None:
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        hits = await store.search(MemorySearchQuery(scope={"user": "u1"}, kinds=["episode"]))
    assert f"user: {said}" in [hit.record.content for hit in hits]


async def test_agent_framework(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    client = maf.ScriptedClient(
        [
            maf.call("memory_save", {"content": OLD, "kind": "profile"}),
            lambda shown: maf.call(
                "memory_save",
                {"content": NEW, "kind": "profile", "supersedes": saved(maf.results(shown))},
                "call-2",
            ),
            ["Noted."],
            ["Lisbon."],
        ]
    )
    run = converse("Microsoft Agent Framework", client=client)
    assert await run("u1", "c1", ["I moved to Lisbon."]) == ["Noted."]
    assert await run("u1", "c2", ["Where do I live?"]) == ["Lisbon."]
    check_remembered(client.instructions(-1))
    await check_captured(tmp_path, "I moved to Lisbon.")


async def test_llama_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    llm, calls = li.scripted(
        [
            li.call("memory_save", {"content": OLD, "kind": "profile"}),
            li.call("memory_save", lambda shown: {"content": NEW, "supersedes": saved(shown)}),
            "Noted.",
            "Lisbon.",
        ]
    )
    run = converse("LlamaIndex", llm=llm)
    assert await run("u1", "c1", ["I moved to Lisbon."]) == ["Noted."]
    assert await run("u1", "c2", ["Where do I live?"]) == ["Lisbon."]
    check_remembered(li.system(calls[-1]))
    await check_captured(tmp_path, "I moved to Lisbon.")


def saved(results: list[Any]) -> str:
    assert results[-1]["ok"] is True, results
    return str(results[-1]["memory"]["id"])
