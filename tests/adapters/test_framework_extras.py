"""Each framework adapter imports its framework only when used, and names the install command."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from recallstore.errors import MissingDependencyError

ADAPTERS = {
    # adapter module: (a module of its framework, the extra)
    "pydantic_ai": ("pydantic_ai", "pydantic-ai"),
    "openai_agents": ("agents", "openai-agents"),
    "adk": ("google.adk", "adk"),
    "langchain": ("langchain_core", "langchain"),
    "anthropic": ("anthropic", "anthropic"),
}


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_a_missing_framework_names_the_install_command(
    adapter: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    framework, extra = ADAPTERS[adapter]
    module = f"recallstore.adapters.{adapter}"
    monkeypatch.delitem(sys.modules, module, raising=False)
    # As if it were not installed: its modules already imported by other tests too.
    for name in [framework, *(m for m in sys.modules if m.startswith(f"{framework}."))]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingDependencyError) as caught:
        importlib.import_module(module)
    assert caught.value.install_command == f"pip install 'recallstore[{extra}]'"
    assert f"pip install 'recallstore[{extra}]'" in str(caught.value)


def test_recallstore_imports_no_framework() -> None:
    code = (
        "import sys, recallstore, recallstore.adapters, recallstore.capability\n"
        f"print(sorted(m for m in {sorted(f for f, _ in ADAPTERS.values())!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_dev_extra_installs_every_framework() -> None:
    pyproject = tomllib.loads(
        (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    )
    extras = pyproject["project"]["optional-dependencies"]
    in_dev = {
        name.strip()
        for requirement in extras["dev"]
        if (found := re.fullmatch(r"recallstore\[(.*)\]", requirement))
        for name in found.group(1).split(",")
    }
    for _, extra in ADAPTERS.values():
        assert extras[extra], extra
        assert extra in in_dev, extra
