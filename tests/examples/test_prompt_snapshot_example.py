"""examples/prompt_snapshot: a user's project in miniature, pinning its agent's prompts.

Its tests run as a user runs them (``pytest`` in that folder) against the snapshots
committed beside them, and a changed prompt fails them.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

RunPytest = Callable[..., subprocess.CompletedProcess[str]]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "prompt_snapshot"


def files_in(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file()
    }


@pytest.mark.slow
def test_example_passes_against_its_committed_snapshots(run_pytest: RunPytest) -> None:
    before = files_in(EXAMPLE)
    assert {name for name in before if name.startswith("snapshots/")} == {
        "snapshots/test_agent_prompt/test_new_user.md",
        "snapshots/test_agent_prompt/test_returning_user.md",
        "snapshots/test_agent_prompt/test_tool_schemas.md",
    }
    result = run_pytest(EXAMPLE, env={"TZ": "NZST-12"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 snapshots passed." in result.stdout
    assert files_in(EXAMPLE) == before  # the run wrote nothing


@pytest.mark.slow
def test_example_fails_when_the_prompt_changes(tmp_path: Path, run_pytest: RunPytest) -> None:
    copy = tmp_path / "prompt_snapshot"
    shutil.copytree(EXAMPLE, copy)
    agent = copy / "agent.py"
    agent.write_text(agent.read_text().replace("Answer briefly", "Answer at length"))
    result = run_pytest(copy, env={"TZ": "NZST-12"})
    assert result.returncode == 1
    assert "2 snapshots failed. 1 snapshot passed." in result.stdout
    assert "- You are Wanderer, a travel assistant. Answer briefly" in result.stdout
