"""docs/backends.md is real: its sample backend passes the kit, its module table is complete.

(Its blocks compile and its dotted names resolve: tests/cli/test_docs_samples.py.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recallstore import MemorySearchQuery, MemoryStore, MemoryWriteInput, load_memory_store
from recallstore.backends.registry import describe_store, unregister_backend
from recallstore.testing import MemoryStoreConformance

DOC = Path(__file__).resolve().parents[2] / "docs" / "backends.md"
TEXT = DOC.read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.S)
[SAMPLE_BACKEND] = [block for block in BLOCKS if "class JsonFileMemoryStore" in block]


@pytest.fixture
def jsonfile_scheme() -> Any:
    """Runs the page's sample (which registers ``jsonfile:``); unregisters afterwards."""
    namespace: dict[str, Any] = {"__name__": "backends_doc_sample"}
    exec(compile(SAMPLE_BACKEND, str(DOC), "exec"), namespace)
    yield namespace["JsonFileMemoryStore"]
    unregister_backend("jsonfile")


class TestDocumentedBackendConformance(MemoryStoreConformance):
    @pytest.fixture
    def store_factory(self, jsonfile_scheme: Any, tmp_path: Path) -> Callable[[], MemoryStore]:
        return lambda: load_memory_store(f"jsonfile:{tmp_path / 'memory.json'}")


async def test_the_sample_keeps_records_in_its_file(jsonfile_scheme: Any, tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    async with load_memory_store(f"jsonfile:{path}") as store:
        assert describe_store(store).path == path
        [tea] = await store.write([MemoryWriteInput(scope={"u": "1"}, content="likes tea")])
    assert tea.id in path.read_text(encoding="utf-8")
    async with load_memory_store(f"jsonfile:{path}") as reopened:
        hits = await reopened.search(MemorySearchQuery(query="tea"))
    assert [hit.record.id for hit in hits] == [tea.id]


def test_the_module_table_lists_every_backend_module() -> None:
    backends = DOC.parents[1] / "src" / "recallstore" / "backends"
    modules = {f"recallstore/backends/{p.name}" for p in backends.glob("*.py")}
    packages = {f"recallstore/backends/{p.parent.name}/" for p in backends.glob("*/__init__.py")}
    rows = dict(re.findall(r"^\| `(recallstore/backends/[\w./]+)` \| (.*) \|$", TEXT, re.M))
    assert set(rows) == (modules | packages) - {"recallstore/backends/__init__.py"}
    for package in packages:
        # A package's row names each of its modules, as `name`.
        inside = {p.stem for p in (backends.parent.parent / package).glob("*.py")} - {"__init__"}
        assert inside <= set(re.findall(r"`(\w+)`", rows[package])), package
