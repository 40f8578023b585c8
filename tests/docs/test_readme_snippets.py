"""The README's snippets run as pasted into a file: the sync one first, then the async one
on the database the first wrote (each in a fresh interpreter, as a user runs them)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


@pytest.mark.slow
def test_the_readme_snippets_run_as_files(tmp_path: Path) -> None:
    sync_block, async_block = readme_blocks()
    for name, block in (("sync_snippet.py", sync_block), ("async_snippet.py", async_block)):
        (tmp_path / name).write_text(block, encoding="utf-8")
        result = subprocess.run(
            [sys.executable, name],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )
        assert result.returncode == 0, f"{name}: {result.stderr}"
        assert "'ok': True" in result.stdout, result.stdout
    assert (tmp_path / "memory.db").is_file()
