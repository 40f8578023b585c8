"""``recallstore capture``: a conversation in a JSONL file stored as episodes, once each."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from recallstore._command.database import make_parent_directory, open_store, parse_scope
from recallstore._command.errors import EXIT_USAGE, CliError
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.capture import DEFAULT_MAX_CHUNK_CHARS, DEFAULT_ROLES, CaptureResult, capture
from recallstore.cli._numbers import at_least
from recallstore.cli._output import count_records, printable
from recallstore.errors import MemoryValidationError
from recallstore.store import MemoryStore

__all__ = ["add_capture_command", "run_capture"]

_ITEM: re.Pattern[str] = re.compile(r"^transcript\[(\d+)\]")


def add_capture_command(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``recallstore capture`` to the command tree (``parents`` give ``--db``)."""
    command = commands.add_parser(
        "capture",
        parents=parents,
        help="store a conversation (JSONL, one message a line) as episodes, once each",
    )
    command.add_argument("file", metavar="FILE", help="a JSONL transcript, or - for stdin")
    command.add_argument(
        "--scope",
        action="append",
        required=True,
        metavar="KEY=VALUE",
        help="the memory scope the records go to (repeatable; at least one)",
    )
    command.add_argument(
        "--conversation",
        help="the conversation id (default: the file's name without its extension)",
    )
    command.add_argument(
        "--role",
        action="append",
        choices=("user", "assistant", "system", "tool"),
        help=f"keep this role's messages (repeatable; default {' and '.join(DEFAULT_ROLES)})",
    )
    command.add_argument(
        "--tool-calls",
        choices=("skip", "text"),
        default="skip",
        help="leave tool calls and results out (skip, the default) or keep them as text",
    )
    command.add_argument(
        "--max-chunk-chars",
        type=at_least(1),
        default=DEFAULT_MAX_CHUNK_CHARS,
        help=f"split longer messages at sentences (default {DEFAULT_MAX_CHUNK_CHARS})",
    )
    command.set_defaults(handler=run_capture)


def run_capture(args: argparse.Namespace) -> int:
    """Read the transcript, then capture it in one store write."""
    scope = parse_scope(args.scope)
    if not scope:
        raise CliError("capture needs at least one --scope KEY=VALUE", EXIT_USAGE)
    conversation = args.conversation
    if conversation is None:
        if args.file == "-":
            raise CliError("capture from stdin needs --conversation ID", EXIT_USAGE)
        conversation = Path(args.file).stem
    lines, transcript = _read(args.file)
    store = open_store(args.db, must_exist=False)

    async def into(target: MemoryStore) -> CaptureResult:
        async with target:
            return await capture(
                target,
                scope,
                transcript,
                conversation_id=conversation,
                roles=tuple(args.role or DEFAULT_ROLES),
                tool_calls=args.tool_calls,
                max_chunk_chars=args.max_chunk_chars,
            )

    try:
        # First into a throwaway store in memory: a transcript capture refuses is refused
        # before the database file (or its folder) is created.
        asyncio.run(into(InMemoryMemoryStore()))
        make_parent_directory(store)
        result = asyncio.run(into(store))
    except MemoryValidationError as exc:
        found = _ITEM.match(exc.field)
        if found is None:
            raise
        line = lines[int(found.group(1))]
        raise CliError(f"{args.file} line {line}: {exc.message}", EXIT_USAGE) from None
    where = printable(" ".join(f"{key}={value}" for key, value in scope.items()))
    print(
        f"captured {result.kept} of {result.messages} messages of {printable(conversation)!r} "
        f"as {count_records(len(result.records))} in {where}: {result.added} new"
    )
    return 0


def _read(file: str) -> tuple[list[int], list[Any]]:
    """Each non-blank line's number and its JSON value (an object or an array)."""
    text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    numbers: list[int] = []
    items: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CliError(f"{file} line {number}: not JSON ({exc.msg})", EXIT_USAGE) from None
        except RecursionError:
            raise CliError(f"{file} line {number}: nested too deeply to read", EXIT_USAGE) from None
        except ValueError:  # an integer past Python's digit limit
            raise CliError(
                f"{file} line {number}: holds an integer of more than "
                f"{sys.get_int_max_str_digits()} digits; write it as a string",
                EXIT_USAGE,
            ) from None
        if not isinstance(value, dict | list):
            raise CliError(
                f"{file} line {number}: expects a JSON object or array, got {type(value).__name__}",
                EXIT_USAGE,
            )
        numbers.append(number)
        items.append(value)
    return numbers, items
