"""Every import path the docs show still imports, and so does every public name.

The layout moves modules; the paths users copy from the docs must keep working. This
walks every page in ``docs/`` and the README: each ``from recallstore… import …`` in a
code block or in the text, each ``import recallstore…`` and each backticked dotted name
(``recallstore.backends.sqlite.SqliteMemoryStore``) must resolve.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import recallstore
from recallstore.errors import MissingDependencyError

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*ROOT.joinpath("docs").glob("*.md"), ROOT / "README.md"])
_FENCED = re.compile(r"```(?:python|py)\n(.*?)```", re.S)
_NAME = r"\w+(?: as \w+)?"
_FROM_IMPORT = re.compile(
    rf"from (recallstore(?:\.\w+)*) import (?:\(([\w,\s]+)\)|({_NAME}(?:, {_NAME})*))"
)
_DOTTED = re.compile(r"`(recallstore(?:\.\w+)+)`")


def _imports_in_code(code: str) -> set[tuple[str, str | None]]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        # Snippets with `...` or a top-level await parse line by line below instead.
        return set()
    found: set[tuple[str, str | None]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("recallstore"):
            found |= {(node.module or "", alias.name) for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {(a.name, None) for a in node.names if a.name.startswith("recallstore")}
    return found


def documented_imports(page: Path) -> set[tuple[str, str | None]]:
    """(module, name) for every recallstore import the page shows; name None for a module."""
    text = page.read_text(encoding="utf-8")
    found: set[tuple[str, str | None]] = set()
    for block in _FENCED.findall(text):
        found |= _imports_in_code(block)
    for module, grouped, inline in _FROM_IMPORT.findall(text):
        names = (grouped or inline).replace("\n", ",").split(",")
        found |= {(module, name.split(" as ")[0].strip()) for name in names}
    return {(module, name) for module, name in found if name != ""}


def _telemetry_names() -> set[str]:
    # OpenTelemetry attribute names (``recallstore.operation``) look like paths but are data.
    text = (ROOT / "event_manifest.json").read_text(encoding="utf-8")
    return set(re.findall(r'"(recallstore(?:\.\w+)+)"', text))


def _is_a_path(dotted: str) -> bool:
    """Whether ``recallstore.x…`` names a module or a public name (not an attribute name
    or a SQL table such as ``recallstore.memory_records``)."""
    head = dotted.split(".")[1]
    modules = {info.name for info in pkgutil.iter_modules(recallstore.__path__)}
    return (head in modules or head in recallstore.__all__) and dotted not in _telemetry_names()


def _framework_elsewhere(dotted: str) -> bool:
    """Whether ``dotted`` is in an adapter whose framework is not installed here (CrewAI
    has an environment of its own): it is checked where it is."""
    if not dotted.startswith("recallstore.adapters."):
        return False
    try:
        importlib.import_module(".".join(dotted.split(".")[:3]))
    except MissingDependencyError:
        return True
    return False


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            target = getattr(target, attribute)
        return target
    raise ImportError(dotted)


def test_the_walk_finds_the_documented_paths() -> None:
    # The walk itself must see the paths it guards, or it would pass on nothing.
    found = {pair for page in PAGES for pair in documented_imports(page)}
    assert ("recallstore", "MemoryCapability") in found
    assert ("recallstore.backends.sqlite", "SqliteMemoryStore") in found
    assert ("recallstore.testing", "MemoryStoreConformance") in found
    assert len(found) > 60


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_documented_import_paths_import(page: Path) -> None:
    broken = []
    for module, name in sorted(documented_imports(page), key=str):
        if module.startswith("recallstore.adapters.") or module.endswith("_langchain_mcp"):
            # An adapter module imports its framework: checked where that is installed.
            try:
                importlib.import_module(module)
            except ImportError as exc:
                if "recallstore" in str(exc.name or ""):
                    broken.append(f"{module}: {exc}")
                continue
        try:
            target = importlib.import_module(module)
            if name is not None and not hasattr(target, name):
                importlib.import_module(f"{module}.{name}")
        except ImportError as exc:
            broken.append(f"from {module} import {name}: {exc}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_documented_dotted_names_resolve(page: Path) -> None:
    broken = []
    for dotted in sorted(set(_DOTTED.findall(page.read_text(encoding="utf-8")))):
        if not _is_a_path(dotted) or _framework_elsewhere(dotted):
            continue
        try:
            _resolve(dotted)
        except (ImportError, AttributeError) as exc:
            broken.append(f"{dotted}: {exc!r}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_every_public_name_imports() -> None:
    for name in recallstore.__all__:
        assert getattr(recallstore, name) is not None, name
    namespace: dict[str, object] = {}
    exec(f"from recallstore import {', '.join(recallstore.__all__)}", namespace)
    assert set(recallstore.__all__) <= set(namespace)
