"""The code in the docs this area owns is real: samples run, dotted names resolve."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
OWNED = [
    "index.md",
    "concepts.md",
    "quickstart.md",
    "store-protocol.md",
    "security.md",
    "cli.md",
    "dashboard.md",
    "backends.md",
    "integrations.md",
    "langgraph.md",
    "capture.md",
    "consolidation.md",
    "learning.md",
]


def python_blocks(name: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(encoding="utf-8"), re.S)


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


@pytest.mark.parametrize("name", OWNED)
def test_python_blocks_compile(name: str) -> None:
    for index, block in enumerate(python_blocks(name)):
        compile(block, f"{name}[{index}]", "exec")


@pytest.mark.parametrize("name", OWNED)
def test_dotted_names_resolve(name: str) -> None:
    text = (DOCS / name).read_text(encoding="utf-8")
    names = set(re.findall(r"`(recallstore(?:\.\w+)+)`", text))
    for dotted in names:
        parts = dotted.split(".")
        for split in range(len(parts), 0, -1):
            try:
                target: object = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            for attribute in parts[split:]:
                assert hasattr(target, attribute), f"{name}: `{dotted}` does not exist"
                target = getattr(target, attribute)
            break
        else:
            pytest.fail(f"{name}: `{dotted}` does not exist")


@pytest.mark.slow
def test_quickstart_sample_runs(tmp_path: Path) -> None:
    [sample] = python_blocks("quickstart.md")
    result = run_python(sample, tmp_path)
    assert result.returncode == 0, result.stderr
    recalled = result.stdout.rsplit("<recalled_memories>", 1)[1]
    assert "] Lives in Lisbon." in recalled
    assert (tmp_path / "memory.db").is_file()


@pytest.mark.slow
def test_store_protocol_samples_are_real(tmp_path: Path) -> None:
    protocol, capabilities, kit_module = python_blocks("store-protocol.md")
    from recallstore.store import MemoryStore

    for method in ("write", "search", "get", "invalidate", "delete", "capabilities"):
        assert f"def {method}(" in protocol
        assert hasattr(MemoryStore, method)

    declared = run_python(
        f"from recallstore.records import MemoryStoreCapabilities\nprint({capabilities.strip()})",
        tmp_path,
    )
    assert declared.returncode == 0, declared.stderr

    namespace: dict[str, object] = {}
    exec(compile(kit_module, "store-protocol.md", "exec"), namespace)
    from recallstore.testing import MemoryStoreConformance

    test_class = namespace["TestMyStore"]
    assert isinstance(test_class, type)
    assert issubclass(test_class, MemoryStoreConformance)
    assert "store_factory" in vars(test_class)
    assert any(name.startswith("test_s7_") for name in dir(test_class))


@pytest.mark.parametrize("name", OWNED)
def test_relative_links_resolve(name: str) -> None:
    text = (DOCS / name).read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target:
            continue
        assert (DOCS / target).exists(), f"{name} links to missing {target}"


def test_capture_sample_runs(tmp_path: Path) -> None:
    [sample] = python_blocks("capture.md")
    result = run_python(sample, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "2 0",
        "['user: I adopted a cat named Miso.', 'assistant: What a lovely name!']",
    ]


def test_consolidation_sample_runs(tmp_path: Path) -> None:
    [sample] = python_blocks("consolidation.md")
    result = run_python(sample, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "2 change(s), 0 no-op(s), 0 rejected" in result.stdout
    assert "duplicate of: the same text, saved again" in result.stdout


def test_learning_walkthrough_runs(tmp_path: Path) -> None:
    """docs/learning.md: distil, the gate, the learned line and its sources, demote."""
    [sample] = python_blocks("learning.md")
    result = run_python(sample, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "1 new fact(s), 0 corroboration(s), 0 rejected" in lines[0]
    assert sum(line.lstrip().startswith("cites [") for line in lines) == 3
    assert "refused: a heuristic target needs a person's approval" in lines
    assert any(
        line.startswith(
            "- Ana wants answers in metric units. [learned from conversations "
            "c-1, c-3, c-4; record "
        )
        for line in lines
    )
    assert lines[-5:-3] == ["('c-1', 'c-3', 'c-4')", "True"]  # demote: byte-identical
    assert lines[-1].endswith(" reverted")
