"""A user's own project pins its memory-bearing prompts with nothing but ``recallstore[testing]``.

The project lives outside this repository, with its own ``tests/`` and ``snapshots/``,
in a fresh virtualenv that has only ``pip install 'recallstore[testing]'``: the plugin
must arrive through its entry point, and its snapshots must be the same bytes in every
time zone, fail with a readable diff when a memory changes, and ``--snapshot-update``
must rewrite exactly the snapshot that changed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

RunPytest = Callable[..., subprocess.CompletedProcess[str]]
REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

PYPROJECT = """\
[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
"""

AGENT = '''\
"""The user's agent: a persona, then what memory gives turn 1."""

from recallstore import MemoryStore, memory_prompt

PERSONA = "You are Wanderer, a travel assistant."


async def system_prompt(store: MemoryStore, user_id: str, first_message: str) -> str:
    memory = await memory_prompt(store, {"user": user_id}, first_message)
    return f"{PERSONA}\\n\\n{memory}"
'''

TESTS = """\
from datetime import timedelta

import pytest

from agent import system_prompt
from recallstore import (
    InMemoryMemoryStore,
    Manual,
    MemoryToolbox,
    MemoryWriteInput,
    assemble_recall,
    render_recall,
)

ANA = {"user": "ana"}


@pytest.fixture(params=["memory_store", "sqlite_memory_store"])
def store(request):
    return request.getfixturevalue(request.param)


@pytest.mark.asyncio
async def test_recall_block(memory_store, memory_clock, prompt_snapshot):
    await memory_store.write(
        [MemoryWriteInput(scope=ANA, kind="profile", content="Ana prefers window seats.")]
    )
    memory_clock.advance(timedelta(hours=20))
    await memory_store.write([MemoryWriteInput(scope=ANA, content="Ana flies to Lisbon in May.")])
    recall = await assemble_recall(memory_store, ANA, "Plans for Lisbon?")
    assert render_recall(recall) == prompt_snapshot


def test_manual(prompt_snapshot):
    assert Manual.render() == prompt_snapshot


def test_tool_schemas(prompt_snapshot):
    assert MemoryToolbox(InMemoryMemoryStore(), ANA).openai_tools() == prompt_snapshot


@pytest.mark.asyncio
async def test_system_prompt(store, memory_clock, prompt_snapshot):
    await store.write(
        [
            MemoryWriteInput(scope=ANA, kind="profile", content="The user's name is Ana."),
            MemoryWriteInput(scope=ANA, content="Ana is vegetarian."),
        ]
    )
    memory_clock.advance(timedelta(days=30))
    await store.write([MemoryWriteInput(scope={"user": "bo"}, content="Bo eats anything.")])
    await store.write([MemoryWriteInput(scope=ANA, content="Ana loves vegetarian food in Porto.")])
    assert await system_prompt(store, "ana", "Vegetarian food tips for Porto?") == prompt_snapshot
"""

EXPECTED_SNAPSHOTS = {
    "snapshots/test_prompts/test_manual.md",
    "snapshots/test_prompts/test_recall_block.md",
    "snapshots/test_prompts/test_system_prompt[memory_store].md",
    "snapshots/test_prompts/test_system_prompt[sqlite_memory_store].md",
    "snapshots/test_prompts/test_tool_schemas.md",
}
# POSIX TZ strings need no tz database: 14 hours ahead of UTC and 12 hours behind it.
AHEAD, BEHIND = "AHEAD-14", "BEHIND+12"


def fresh_venv(folder: Path, *requirements: str) -> Path:
    """The python of a new virtualenv in ``folder`` with only ``requirements`` installed."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    python = folder / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *requirements],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    return python


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with nothing but ``recallstore[testing]`` installed."""
    return fresh_venv(tmp_path_factory.mktemp("user-venv"), f"{REPO}[testing]")


def snapshot_files(project: Path) -> dict[str, bytes]:
    return {
        path.relative_to(project).as_posix(): path.read_bytes()
        for path in (project / "snapshots").rglob("*")
        if path.is_file()
    }


def modification_times(project: Path) -> dict[str, int]:
    return {
        path.relative_to(project).as_posix(): path.stat().st_mtime_ns
        for path in (project / "snapshots").rglob("*")
        if path.is_file()
    }


def test_user_project_pins_its_prompts_with_the_plugin(
    venv_python: Path, tmp_path: Path, run_pytest: RunPytest
) -> None:
    project = tmp_path / "travel-agent"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "agent.py").write_text(AGENT)
    test_file = project / "tests" / "test_prompts.py"
    test_file.write_text(TESTS)

    # The time zones really differ for the user's processes.
    offsets = [
        subprocess.run(
            [str(venv_python), "-c", "import time; print(time.strftime('%z'))"],
            env={**os.environ, "TZ": tz},
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
        for tz in (AHEAD, BEHIND)
    ]
    assert offsets == ["+1400", "-1200"]

    # Written from scratch twice, in fresh processes 26 hours apart in local time.
    first = run_pytest(project, "--snapshot-update", python=venv_python, env={"TZ": AHEAD})
    assert first.returncode == 0, first.stdout + first.stderr
    assert "5 snapshots generated" in first.stdout
    written = snapshot_files(project)
    assert set(written) == EXPECTED_SNAPSHOTS
    shutil.rmtree(project / "snapshots")
    second = run_pytest(project, "--snapshot-update", python=venv_python, env={"TZ": BEHIND})
    assert second.returncode == 0, second.stdout + second.stderr
    assert snapshot_files(project) == written
    checked = run_pytest(project, python=venv_python, env={"TZ": "UTC"})
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "5 snapshots passed" in checked.stdout
    assert not list(project.rglob("__snapshots__"))

    # What the files hold: readable text, dates from the frozen clock, the same bytes
    # through SQLite as through the in-memory store.
    folder = "snapshots/test_prompts/"
    block = written[f"{folder}test_recall_block.md"].decode()
    assert "- [m1 2026-01-15] Ana prefers window seats.\n" in block
    assert re.search(r"^- \[m\d 2026-01-16\] ", block, re.MULTILINE)  # 20 hours after 09:30 UTC
    assert (
        written[f"{folder}test_system_prompt[memory_store].md"]
        == (written[f"{folder}test_system_prompt[sqlite_memory_store].md"])
    )
    prompt = written[f"{folder}test_system_prompt[memory_store].md"].decode()
    assert prompt.startswith("You are Wanderer, a travel assistant.\n\n## Memory\n")
    assert "Bo eats anything." not in prompt
    assert written[f"{folder}test_tool_schemas.md"].startswith(b'```json\n[\n  {\n    "type"')

    # Changing one saved memory fails the run with a readable diff, and writes nothing.
    before = modification_times(project)
    test_file.write_text(TESTS.replace("window seats", "aisle seats"))
    failed = run_pytest(project, python=venv_python, env={"TZ": AHEAD})
    assert failed.returncode == 1, failed.stdout + failed.stderr
    report = failed.stdout
    assert "1 failed, 4 passed" in report
    assert "FAILED tests/test_prompts.py::test_recall_block" in report
    assert "1 snapshot failed. 4 snapshots passed." in report
    # syrupy's diff: "-" the saved line, "+" the line this run produced.
    entry = r"- \[m1 2026-01-15\] Ana prefers"
    assert len(re.findall(rf"^E\s+- {entry} window seats\.$", report, re.MULTILINE)) == 1, report
    assert len(re.findall(rf"^E\s+\+ {entry} aisle seats\.$", report, re.MULTILINE)) == 1, report
    assert snapshot_files(project) == written
    assert modification_times(project) == before

    # --snapshot-update rewrites exactly that file.
    updated = run_pytest(project, "--snapshot-update", python=venv_python, env={"TZ": BEHIND})
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "1 snapshot updated" in updated.stdout
    now = snapshot_files(project)
    changed = {name for name in written if now[name] != written[name]}
    assert changed == {f"{folder}test_recall_block.md"}
    touched = {name for name, mtime in modification_times(project).items() if mtime != before[name]}
    assert touched == changed
    assert now[f"{folder}test_recall_block.md"] == written[f"{folder}test_recall_block.md"].replace(
        b"window seats", b"aisle seats"
    )


def test_without_the_testing_extra_the_project_still_runs_its_tests(
    tmp_path: Path, run_pytest: RunPytest
) -> None:
    """The entry point is installed with the package, extra or not: it must not break pytest."""
    python = fresh_venv(tmp_path / "venv", str(REPO), "pytest")
    for missing in ("syrupy", "pytest_asyncio", "hypothesis"):
        probe = subprocess.run([str(python), "-c", f"import {missing}"], capture_output=True)
        assert probe.returncode != 0, missing
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    (project / "tests" / "test_prompt.py").write_text(
        "def test_prompt(prompt_snapshot):\n    assert 'x' == prompt_snapshot\n"
    )
    result = run_pytest(project, python=python, env={"TZ": "UTC"})
    assert "1 passed, 1 error" in result.stdout, result.stdout + result.stderr
    assert "the prompt_snapshot fixture needs the 'testing' extra" in result.stdout
    assert "pip install 'recallstore[testing]'" in result.stdout
