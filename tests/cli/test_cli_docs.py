"""docs/cli.md documents every command, subcommand and option of the real parser."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from recallstore.cli import build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("recallstore",)
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield " ".join((*path, name)), sub
                yield from _walk(sub, (*path, name))


def _sections() -> dict[str, str]:
    """Heading text of every `## \\`recallstore ...\\`` heading → the text under it."""
    text = DOCS.read_text(encoding="utf-8")
    parts = re.split(r"^#{2,3} `(recallstore[^`]*)`\s*$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


COMMANDS = dict(_walk(build_parser()))


def test_the_parser_has_the_documented_shape() -> None:
    # Guards the walk itself: if it found nothing, every other test would pass vacuously.
    assert {"recallstore list", "recallstore events", "recallstore events manifest"} <= set(
        COMMANDS
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_a_section(command: str) -> None:
    assert command in _sections(), f"docs/cli.md has no '## `{command}`' section"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_is_documented_in_its_section(command: str) -> None:
    section = _sections().get(command, "")
    for action in COMMANDS[command]._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        names = [name for name in action.option_strings if name.startswith("--")]
        if not action.option_strings:
            names = [str(action.metavar or action.dest)]
        assert any(
            re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", section) for name in names
        ), f"docs/cli.md: section '{command}' does not document {names[0]}"


def test_no_section_documents_a_command_that_does_not_exist() -> None:
    assert set(_sections()) - set(COMMANDS) - {"recallstore"} == set()
