"""docs/store-protocol.md lists every public name a backend author needs.

"Every public name the bundled backends use" is read from their imports: names from a
public recallstore module, and names from a private one that a public module
re-exports (``tokenize`` lives in ``recallstore._search.text`` and is public as
``recallstore.store.tokenize``).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ROOT / "src" / "recallstore" / "backends"
STORE_PROTOCOL = ROOT / "docs" / "store-protocol.md"
_PUBLIC_HOMES = (
    "recallstore.store",
    "recallstore.records",
    "recallstore.values",
    "recallstore.errors",
)


def writing_a_backend(text: str) -> str:
    """The "Writing a backend" section of a store-protocol page."""
    start = text.index("## Writing a backend")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def public_names_used_by_the_bundled_backends() -> set[str]:
    """Every public recallstore name the bundled backends import."""
    exported = {name for home in _PUBLIC_HOMES for name in importlib.import_module(home).__all__}
    used = set()
    # _tuning.py holds the benchmarks' knobs, which no backend needs.
    for path in set(BACKENDS.rglob("*.py")) - {BACKENDS / "_tuning.py"}:
        # A backend package's own modules are its internals, not names an author needs.
        own = ".".join(("recallstore", *path.relative_to(BACKENDS.parent).parts[:-1]))
        inside_a_package = path.parent != BACKENDS
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                "recallstore"
            ):
                continue
            if inside_a_package and (
                node.module == own or (node.module or "").startswith(own + ".")
            ):
                continue
            private_module = any(part.startswith("_") for part in (node.module or "").split("."))
            for alias in node.names:
                if alias.name.startswith("_"):
                    continue
                if not private_module or alias.name in exported:
                    used.add(alias.name)
    return used


def undocumented_backend_names(page: str) -> set[str]:
    """Public names the bundled backends use that "Writing a backend" does not list."""
    listed = set(re.findall(r"^\| `(\w+)` \|", writing_a_backend(page), re.M))
    return public_names_used_by_the_bundled_backends() - listed


def test_every_public_name_the_bundled_backends_use_is_in_writing_a_backend() -> None:
    page = STORE_PROTOCOL.read_text(encoding="utf-8")
    assert undocumented_backend_names(page) == set()


def test_the_check_fails_when_a_used_name_is_missing_from_the_section() -> None:
    page = STORE_PROTOCOL.read_text(encoding="utf-8")
    assert "StoreLifecycle" in public_names_used_by_the_bundled_backends()
    assert "tokenize" in public_names_used_by_the_bundled_backends()
    without = re.sub(r"^\| `StoreLifecycle` \|.*\n", "", page, flags=re.M)
    without = re.sub(r"^\| `tokenize` \|.*\n", "", without, flags=re.M)
    assert undocumented_backend_names(without) == {"StoreLifecycle", "tokenize"}


def test_every_name_listed_in_writing_a_backend_is_importable_from_where_it_says() -> None:
    rows = re.findall(
        r"^\| `(\w+)` \| `([\w.]+)` \|",
        writing_a_backend(STORE_PROTOCOL.read_text(encoding="utf-8")),
        re.M,
    )
    assert len(rows) >= 30
    for name, module in rows:
        assert hasattr(importlib.import_module(module), name), f"{module}.{name}"
        assert name in importlib.import_module(module).__all__, f"{module}.{name} not public"


def test_the_docs_cite_no_design_file_outside_the_repository() -> None:
    for page in ("conformance.md", "store-protocol.md"):
        assert "DESIGN.md" not in (ROOT / "docs" / page).read_text(encoding="utf-8"), page
