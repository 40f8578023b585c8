"""The import layering is enforced: `make check` runs import-linter, and it catches a
wrong import direction.

Each case copies the package into a temporary folder, adds ONE bad import (or an
unplaced module) to the copy and runs the same ``lint-imports`` command with the
project's own configuration against it: it must fail there and pass on the real tree.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "recallstore"
LintImports = Callable[[Path, Path], subprocess.CompletedProcess[str]]


@pytest.fixture
def lint_imports(run_tool: Any) -> LintImports:
    """``lint-imports`` with a project's pyproject.toml, importing from a source root."""

    def lint(project: Path, source_root: Path) -> subprocess.CompletedProcess[str]:
        # PYTHONPATH comes before the editable install's path entry, so the graph is
        # built from the copy.
        result: subprocess.CompletedProcess[str] = run_tool(
            "lint-imports",
            "--no-cache",
            "--no-logo",
            project / "pyproject.toml",
            cwd=project,
            env={"PYTHONPATH": str(source_root)},
            timeout=120,
        )
        return result

    return lint


def copy_project(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        PACKAGE, tmp_path / "src" / "recallstore", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path


def add_line(module: Path, line: str) -> None:
    """Append an import to ``module`` (after its own imports, where ruff would not care)."""
    module.write_text(module.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_real_tree_keeps_every_contract(lint_imports: LintImports) -> None:
    result = lint_imports(ROOT, ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"Contracts: (\d+) kept, 0 broken", result.stdout)


@pytest.mark.parametrize(
    ("module", "bad_import", "broken"),
    [
        # The data contract reaching up into the storage machinery.
        ("records.py", "import recallstore.store", "recallstore.records"),
        # The store protocol depending on a backend.
        ("store/protocol.py", "import recallstore.backends.memory", "recallstore.store"),
        # A backend reaching up into the agent surface.
        ("backends/memory.py", "import recallstore.toolbox", "recallstore.backends"),
        # The agent surface depending on the event machinery.
        ("toolbox.py", "import recallstore.events", "recallstore.toolbox"),
        # Events depending on a surface.
        ("events/bus.py", "import recallstore.dashboard", "recallstore.events"),
        # The pure render code importing the machinery at run time (same layer as recall,
        # so only the "pure-render" contract catches it).
        ("prompt/_render.py", "import recallstore.recall", "recallstore.prompt"),
        # A surface borrowing another's internals (what the CLI once did).
        ("cli/_records.py", "import recallstore.dashboard._requests", "recallstore.cli"),
        ("dashboard/_api.py", "import recallstore.dashboard._pages", "recallstore.dashboard._api"),
    ],
)
def test_a_wrong_import_direction_fails_the_check(
    lint_imports: LintImports, tmp_path: Path, module: str, bad_import: str, broken: str
) -> None:
    project = copy_project(tmp_path)
    add_line(project / "src" / "recallstore" / module, bad_import)
    result = lint_imports(project, project / "src")
    assert result.returncode != 0, result.stdout
    assert "BROKEN" in result.stdout
    assert broken in result.stdout


def test_a_module_outside_every_layer_fails_the_check(
    lint_imports: LintImports, tmp_path: Path
) -> None:
    project = copy_project(tmp_path)
    (project / "src" / "recallstore" / "unplaced.py").write_text('"""Nowhere."""\n')
    result = lint_imports(project, project / "src")
    assert result.returncode != 0, result.stdout
    assert "unplaced" in result.stdout + result.stderr
