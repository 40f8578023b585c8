"""A backend written outside the repository, from the documented names only, passes the kit.

The backend (``outside_backend/jsonl_store.py``: JSON lines, durable, one opener at a
time) is copied into a temporary directory with a one-fixture test module, and pytest
runs there in a subprocess with no configuration at all — as in a new project.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BACKEND = HERE / "outside_backend" / "jsonl_store.py"
STORE_PROTOCOL = HERE.parents[1] / "docs" / "store-protocol.md"

_TEST_MODULE = """\
import pytest

from jsonl_store import JsonLinesMemoryStore
from recallstore.testing import MemoryStoreConformance


class TestJsonLinesStore(MemoryStoreConformance):
    @pytest.fixture
    def store_factory(self, tmp_path):
        return lambda: JsonLinesMemoryStore(tmp_path / "memory")

    @pytest.fixture
    def clocked_store_factory(self, tmp_path):
        return lambda clock: JsonLinesMemoryStore(tmp_path / "clocked", clock=clock)
"""


def writing_a_backend_section() -> str:
    """The "Writing a backend" section of docs/store-protocol.md."""
    text = STORE_PROTOCOL.read_text(encoding="utf-8")
    start = text.index("## Writing a backend")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def recallstore_imports(source: str) -> list[tuple[str, str]]:
    """Every ``(module, name)`` a module imports from recallstore."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("recallstore"):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.startswith("recallstore")]
    return found


def test_the_outside_backend_imports_only_documented_public_names() -> None:
    imports = recallstore_imports(BACKEND.read_text(encoding="utf-8"))
    assert imports
    documented = set(re.findall(r"`([\w.]+)`", writing_a_backend_section()))
    for module, name in imports:
        assert not any(part.startswith("_") for part in module.split(".")), module
        assert not name.startswith("_"), name
        assert name in documented, f"{module}.{name} is not in 'Writing a backend'"


@pytest.mark.slow
def test_a_backend_written_outside_the_repository_passes_the_kit(tmp_path: Path) -> None:
    project = tmp_path / "my-backend"
    project.mkdir()
    shutil.copy(BACKEND, project / "jsonl_store.py")
    (project / "test_jsonl_store.py").write_text(_TEST_MODULE, encoding="utf-8")
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, output[-5000:]
    (summary,) = [line for line in output.splitlines() if re.search(r"\d+ passed", line)]
    assert "failed" not in summary
    # The single-opener and clock sub-suites ran; only the shared-location durability
    # tests, the import/export sub-suite (and the payload export test), the idempotency
    # sub-suite (9 tests), the forget sub-suite (8 tests and S24's 2), the revise
    # sub-suite (6 tests), the promote sub-suite (9 tests) and the hybrid sub-suite (8
    # tests; none of them declared) skip.
    assert "single-opener rule" not in output
    assert "clock rule" not in output
    assert "50 skipped" in summary, output[-3000:]
    # Zero configuration: no notice to configure pytest-asyncio, no files in the project.
    assert "asyncio_default_fixture_loop_scope" not in output
    assert "warning" not in summary
    assert not (project / ".hypothesis").exists()
