"""The pytest plugin in a project's own pytest runs: where snapshots go, what they hold."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

RunPytest = Callable[..., subprocess.CompletedProcess[str]]

PROMPT_TEST = """\
def test_prompt(prompt_snapshot):
    assert "line one\\nline two\\n" == prompt_snapshot
"""


def write_project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def snapshot_paths(project: Path) -> set[str]:
    return {p.relative_to(project).as_posix() for p in project.rglob("*.md")}


@pytest.mark.slow
def test_snapshots_mirror_the_testpaths_folders(tmp_path: Path, run_pytest: RunPytest) -> None:
    project = write_project(
        tmp_path,
        {
            "pytest.ini": "[pytest]\ntestpaths = tests\n",
            "tests/test_top.py": PROMPT_TEST,
            "tests/agent/test_deep.py": PROMPT_TEST,
        },
    )
    result = run_pytest(project, "--snapshot-update")
    assert result.returncode == 0, result.stdout
    assert snapshot_paths(project) == {
        "snapshots/test_top/test_prompt.md",
        "snapshots/agent/test_deep/test_prompt.md",
    }
    assert (project / "snapshots/test_top/test_prompt.md").read_text() == "line one\nline two\n"


@pytest.mark.slow
def test_without_testpaths_snapshots_mirror_the_rootdir(
    tmp_path: Path, run_pytest: RunPytest
) -> None:
    project = write_project(
        tmp_path, {"pytest.ini": "[pytest]\n", "tests/test_top.py": PROMPT_TEST}
    )
    assert run_pytest(project, "--snapshot-update").returncode == 0
    assert snapshot_paths(project) == {"snapshots/tests/test_top/test_prompt.md"}


@pytest.mark.slow
def test_the_snapshot_folder_is_configurable(tmp_path: Path, run_pytest: RunPytest) -> None:
    project = write_project(
        tmp_path,
        {
            "pytest.ini": (
                "[pytest]\ntestpaths = tests\nrecallstore_snapshot_dir = pinned/prompts\n"
            ),
            "tests/test_top.py": PROMPT_TEST,
        },
    )
    assert run_pytest(project, "--snapshot-update").returncode == 0
    assert snapshot_paths(project) == {"pinned/prompts/test_top/test_prompt.md"}
    assert run_pytest(project).returncode == 0


@pytest.mark.slow
def test_json_data_is_a_fenced_block_and_other_data_a_clear_error(
    tmp_path: Path, run_pytest: RunPytest
) -> None:
    project = write_project(
        tmp_path,
        {
            "pytest.ini": "[pytest]\ntestpaths = tests\n",
            "tests/test_data.py": (
                "def test_schema(prompt_snapshot):\n"
                "    assert {'name': 'memory_save', 'tags': ['é']} == prompt_snapshot\n"
                "\n"
                "def test_object(prompt_snapshot):\n"
                "    assert object() == prompt_snapshot\n"
            ),
        },
    )
    result = run_pytest(project, "--snapshot-update")
    assert result.returncode == 1
    assert "prompt_snapshot stores text: pass a str, or JSON data" in result.stdout
    assert "not object" in result.stdout
    schema = project / "snapshots/test_data/test_schema.md"
    assert schema.read_text(encoding="utf-8") == (
        '```json\n{\n  "name": "memory_save",\n  "tags": [\n    "é"\n  ]\n}\n```\n'
    )
