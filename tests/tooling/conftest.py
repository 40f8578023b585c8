"""Running the project's own tools (lint-imports, pre-commit, pytest) as subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RunTool = Callable[..., subprocess.CompletedProcess[str]]


def _run_tool(
    *args: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """Run a console script of this virtualenv (or ``python`` itself); never raises on exit."""
    program, *rest = args
    executable = (
        sys.executable if program == "python" else Path(sys.executable).with_name(str(program))
    )
    return subprocess.run(
        [str(executable), *(str(arg) for arg in rest)],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def run_tool() -> RunTool:
    """``run_tool("lint-imports", "--no-cache", cwd=..., env={...})`` → CompletedProcess."""
    return _run_tool
