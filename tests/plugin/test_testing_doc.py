"""docs/testing.md is real: its samples compile, its names resolve, and its test sample
passes in a project of its own and produces the snapshot file the page says it does."""

from __future__ import annotations

import importlib
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

RunPytest = Callable[..., subprocess.CompletedProcess[str]]
DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_python_blocks_compile() -> None:
    blocks = python_blocks()
    assert len(blocks) == 3
    for index, block in enumerate(blocks):
        compile(block, f"testing.md[{index}]", "exec")


def test_dotted_names_resolve() -> None:
    names = set(re.findall(r"`(recallstore(?:\.\w+)+)`", DOC.read_text(encoding="utf-8")))
    assert "recallstore.store.new_record_id" in names
    for dotted in names:
        module, _, attribute = dotted.rpartition(".")
        try:
            assert hasattr(importlib.import_module(module), attribute), dotted
        except ImportError:
            importlib.import_module(dotted)


def test_fixture_table_names_the_plugins_fixtures() -> None:
    from recallstore.testing import pytest_plugin

    documented = set(re.findall(r"^\| `(\w+)` \|", DOC.read_text(encoding="utf-8"), re.M))
    public = {name for name in pytest_plugin.__all__ if not name.isupper() and name[0].islower()}
    assert documented == public
    # Without the testing extra, the entry point stands in for exactly these fixtures.
    from recallstore import _pytest_entry

    assert set(_pytest_entry._PLUGIN_FIXTURES) == public


@pytest.mark.slow
def test_the_test_sample_runs_in_a_project(tmp_path: Path, run_pytest: RunPytest) -> None:
    sample = python_blocks()[0]
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_agent_prompt.py").write_text(sample)
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    result = run_pytest(tmp_path, "--snapshot-update")
    assert result.returncode == 0, result.stdout + result.stderr
    snapshot = tmp_path / "snapshots" / "test_agent_prompt" / "test_returning_user.md"
    assert "`snapshots/test_agent_prompt/test_returning_user.md`" in DOC.read_text()
    text = snapshot.read_text(encoding="utf-8")
    assert text.startswith("You are a travel assistant.\n\n## Memory\n")
    assert "- [m1 2026-01-15] " in text
    assert re.search(r"^- \[m\d 2026-01-24\] ", text, re.MULTILINE)
    assert "] Ana lives in Lisbon.\n</recalled_memories>" in text


@pytest.mark.parametrize("link", ["conformance.md", "store-protocol.md"])
def test_links_to_the_kit_pages_exist(link: str) -> None:
    assert f"]({link}" in DOC.read_text()
    assert (DOC.parent / link).is_file()
