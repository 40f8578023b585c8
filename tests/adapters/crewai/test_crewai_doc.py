"""docs/framework-adapters.md's CrewAI snippet runs as written, with CrewAI's own Crew loop
and a scripted BaseLLM, offline: conversation 1 saves a fact and corrects it with
``supersedes``; conversation 2's system prompt holds the correction, not the old fact;
what conversation 1 said is captured once, however often its hook runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.adapters.crewai._model import ScriptedLLM, act, answer, observations
from tests.docs._framework_adapters_page import MAX_LINES, snippets

from recallstore.prompt import RECALL_CLOSE
from recallstore.records import MemorySearchQuery
from recallstore.sync import SyncMemoryStore

OLD, NEW = "Lives in Porto.", "Lives in Lisbon."


def test_the_crewai_snippet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = snippets()["CrewAI"]
    assert len([line for line in code.splitlines() if line.strip()]) <= MAX_LINES
    namespace: dict[str, Any] = {}
    exec(compile(code, "framework-adapters.md: CrewAI", "exec"), namespace)
    llm = ScriptedLLM(
        [
            act("memory_save", {"content": OLD, "kind": "profile"}),
            lambda shown: act(
                "memory_save",
                {"content": NEW, "kind": "profile", "supersedes": saved(shown)},
            ),
            answer("Noted."),
            answer("Lisbon."),
        ]
    )
    assert namespace["answer"]("u1", "c1", "I moved to Lisbon.", llm) == "Noted."
    assert namespace["answer"]("u1", "c2", "Where do I live?", llm) == "Lisbon."
    system = llm.system(-1)
    assert RECALL_CLOSE in system
    assert NEW in system
    assert OLD not in system
    with SyncMemoryStore(tmp_path / "memory.db") as store:
        hits = store.search(MemorySearchQuery(scope={"user": "u1"}, kinds=("episode",)))
    said = sorted(hit.record.content for hit in hits)
    assert said == [
        "assistant: Lisbon.",
        "assistant: Noted.",
        "user: I moved to Lisbon.",
        "user: Where do I live?",
    ]


@pytest.mark.slow
def test_the_crewai_snippet_passes_mypy_strict_with_crewai_installed(tmp_path: Path) -> None:
    """tests/docs/test_snippet_types.py checks it where CrewAI is not installed (its names
    are Any there); here it is checked against CrewAI's own types."""
    path = tmp_path / "crewai_snippet.py"
    path.write_text(snippets()["CrewAI"], encoding="utf-8")
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "pyproject.toml", str(path)],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def saved(shown: list[dict[str, Any]]) -> str:
    result = observations(shown)[-1]
    assert result["ok"] is True, result
    return str(result["memory"]["id"])
