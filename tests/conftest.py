"""Helpers for the whole suite; snapshots come from recallstore's own pytest plugin.

Snapshots go through the plugin as they do in a user's project: the plugin
(``recallstore.testing.pytest_plugin``, loaded by its ``pytest11`` entry point) gives the
``prompt_snapshot`` fixture: one readable text file per snapshot under the
top-level ``snapshots/`` folder, mirroring ``tests/``
(``snapshots/agent/test_prompt/test_manual_snapshot.md``), so a prompt change shows up in
review as a plain text diff. Snapshots no test uses fail the run (syrupy's default).
Update them with ``.venv/bin/pytest tests/agent --snapshot-update``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

RunPytest = Callable[..., subprocess.CompletedProcess[str]]

# The suite runs SQLite stores on the standard library's sqlite3, as most users do (no
# 'sqlite' extra), and many tests inspect their files with it: two SQLite libraries on
# one file in one process do not see each other's locks. The fast driver has its own
# tests (the whole conformance kit, deletion bytes, driver choice); set the variable to
# run everything on it.
os.environ.setdefault("RECALLSTORE_SQLITE_DRIVER", "stdlib")

# Test modules share helpers as ``tests.<folder>.<module>`` (kit mutants, fixtures):
# the repository root goes on the path, as ``python -m pytest`` puts it for a run from there.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Settings of this run that must not leak into a project's own pytest run.
_OUR_SETTINGS = {"PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH", "VIRTUAL_ENV"}


def _run_pytest(
    project: Path,
    *args: str,
    python: str | os.PathLike[str] = sys.executable,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """pytest in a fresh process in ``project``, as that project's user runs it."""
    inherited = {k: v for k, v in os.environ.items() if k not in _OUR_SETTINGS}
    return subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project,
        env={**inherited, "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def run_pytest() -> RunPytest:
    """Runs pytest in another project folder: ``run_pytest(folder, *args, python=, env=)``."""
    return _run_pytest
