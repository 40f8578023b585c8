"""What a newcomer working from a clone reads: how to install an extra there (there is no
release yet), in the docs and in every missing-extra error; and the index's list of
commands, checked against the real command tree."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from recallstore.cli._main import build_parser
from recallstore.errors import IncompatibleDependencyError, MissingDependencyError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("page", ["README.md", "docs/index.md", "docs/quickstart.md"])
def test_the_entry_pages_say_how_to_install_an_extra_from_the_clone(page: str) -> None:
    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    assert "pip install -e '.[" in text
    assert "no release on PyPI yet" in text


def test_a_missing_extra_names_the_release_and_the_clone_command() -> None:
    error = MissingDependencyError("hybrid search", "semantic")
    assert str(error) == (
        "hybrid search needs the 'semantic' extra: pip install 'recallstore[semantic]' "
        "(from a clone: pip install -e '.[semantic]')"
    )
    assert error.clone_install_command == "pip install -e '.[semantic]'"
    old = IncompatibleDependencyError("x", "mcp", package="mcp", found="1.0", needed=">=2")
    assert str(old).endswith("(from a clone: pip install -e '.[mcp]')")


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    names = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, f"{prefix}{name} ")
                names.extend(nested or [f"{prefix}{name}"])
    return names


def test_the_index_lists_every_command() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    line = " ".join(
        index.split("[Command line](cli.md) — `recallstore ", 1)[1].split("`")[0].split()
    )
    listed = [name.strip() for name in line.split("|")]
    assert sorted(listed) == sorted(_commands(build_parser()))
