"""docs/contributing.md's layout is the tree's: its tables are checked against it.

The layers table must say what the layers contract in ``pyproject.toml`` says; the
source-tree table must name every top-level module and package of ``recallstore``;
the test-folder table must name every folder of ``tests/`` that holds tests, and no other.
No module imports itself back, and the check bites: on a copy of the package with one
circle added (at the top of a module, inside a function, between two packages) it fails.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from tests.tooling.import_circles import import_circles

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "recallstore"
DOC = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")


def _section(heading: str) -> str:
    start = DOC.index(f"{heading}\n")
    following = re.search(r"^#{2,3} ", DOC[start + len(heading) + 1 :], re.M)
    return DOC[start : start + len(heading) + 1 + (following.start() if following else len(DOC))]


def _first_cells(section: str) -> list[str]:
    return [row.split("|")[1].strip() for row in re.findall(r"^\|[^-].*\|$", section, re.M)][1:]


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _layers_contract() -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [layers] = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    return dict(layers)


def test_the_layers_table_is_the_layers_contract() -> None:
    layers = _layers_contract()
    contract = [set(re.split(r"\s*[|:]\s*", layer.strip())) for layer in layers["layers"]]
    rows = re.findall(r"^\| (\d)\. [\w ]+ \| (.*?) \| .* \|$", _section("## Layers"), re.M)
    documented = [set(_names(modules)) for _, modules in sorted(rows)]
    # The contract lists layers top first; the table from the bottom up.
    assert documented == contract[::-1]


def test_the_source_tree_table_names_every_module_and_package() -> None:
    tree = {p.name for p in PACKAGE.glob("*.py")} | {
        f"{p.parent.name}/" for p in PACKAGE.glob("*/__init__.py")
    }
    rows = _first_cells(_section("### Source tree"))
    documented = {name for cell in rows for name in _names(cell)}
    assert documented == tree - {"__init__.py", "py.typed"}


def test_the_test_folder_table_names_every_test_folder() -> None:
    tests = ROOT / "tests"
    holding_tests = {
        f"tests/{path.parent.relative_to(tests).as_posix()}/"
        for path in tests.rglob("test_*.py")
        if path.parent != tests and "__pycache__" not in path.parts
    }
    rows = _first_cells(_section("### Test folders"))
    documented = {name for cell in rows for name in _names(cell)}
    assert documented == holding_tests


def test_every_source_package_has_its_test_folder() -> None:
    # tests/ mirrors src/: each package is tested in tests/<package>/ or is named in the
    # row of the folder that tests it (`_search/` in tests/search/, `prompt/` in tests/agent/).
    rows = re.findall(r"^\| `(tests/[\w/]+/)` \| (.*) \|$", _section("### Test folders"), re.M)
    for package in sorted(PACKAGE.glob("*/__init__.py")):
        name = f"{package.parent.name}/"
        assert any(folder == f"tests/{name}" or name in _names(cell) for folder, cell in rows), name


def test_no_module_imports_itself_back() -> None:
    # import-linter's layers allow any import inside a layer; a circle there still makes
    # import order matter and the code hard to read, so none is allowed anywhere, and
    # the layers contract ignores no import that could hide one.
    assert "ignore_imports" not in _layers_contract()
    assert import_circles("recallstore") == []


def _copy_package(tmp_path: Path) -> Path:
    shutil.copytree(
        PACKAGE, tmp_path / "src" / "recallstore", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path / "src" / "recallstore"


def _circles_in_copy(run_tool: Any, copy: Path) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH comes before the editable install's path entry, so the graph is built
    # from the copy.
    result: subprocess.CompletedProcess[str] = run_tool(
        "python",
        Path(__file__).with_name("import_circles.py"),
        "recallstore",
        cwd=copy.parents[1],
        env={"PYTHONPATH": str(copy.parent)},
        timeout=120,
    )
    return result


@pytest.mark.parametrize(
    ("module", "added", "circle"),
    [
        # At the top of a module: the tool model importing the toolbox that uses it.
        (
            "tools.py",
            "import recallstore.toolbox",
            "recallstore.tools -> recallstore.toolbox -> recallstore.tools",
        ),
        # Inside a function, where it still runs: the event models reaching the bus.
        (
            "events/models.py",
            "def _late() -> None:\n    import recallstore.events.bus",
            "recallstore.events.models -> recallstore.events.bus -> recallstore.events.models",
        ),
        # Between two packages only: no module imports itself back, but toolbox uses
        # toolset and a new toolset module uses toolbox.
        (
            "toolset/_added.py",
            "import recallstore.toolbox",
            "recallstore.toolbox <-> recallstore.toolset",
        ),
    ],
)
def test_an_import_circle_fails_the_check(
    run_tool: Any, tmp_path: Path, module: str, added: str, circle: str
) -> None:
    copy = _copy_package(tmp_path)
    path = copy / module
    before = path.read_text(encoding="utf-8") if path.exists() else '"""Added."""\n'
    path.write_text(f"{before}\n{added}\n", encoding="utf-8")
    result = _circles_in_copy(run_tool, copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert circle in result.stdout


def test_an_import_for_the_type_checker_only_is_no_circle(run_tool: Any, tmp_path: Path) -> None:
    # It never runs, so import order cannot depend on it (docs/contributing.md).
    copy = _copy_package(tmp_path)
    models = copy / "events" / "models.py"
    added = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import recallstore.events.bus"
    models.write_text(f"{models.read_text(encoding='utf-8')}\n{added}\n", encoding="utf-8")
    result = _circles_in_copy(run_tool, copy)
    assert (result.returncode, result.stdout.strip()) == (0, ""), result.stderr
