"""``recallstore forget``: erase every record of a scope (the store's ``"forget"`` extension)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any, cast

from recallstore._command.database import open_store, parse_scope
from recallstore._command.errors import EXIT_FAILED, EXIT_USAGE, CliError
from recallstore.cli._output import count_records, printable
from recallstore.jsonl import iter_records
from recallstore.store import FORGET_EXTENSION, MemoryStore, SupportsForget

__all__ = ["add_forget_command", "run_forget"]


def add_forget_command(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``recallstore forget`` to the command tree (``parents`` give ``--db``)."""
    forget = commands.add_parser(
        "forget", parents=parents, help="erase every record of a scope (asks first)"
    )
    forget.add_argument(
        "--scope",
        action="append",
        required=True,
        metavar="KEY=VALUE",
        help="records whose scope contains this pair (repeatable; at least one)",
    )
    forget.add_argument(
        "--dry-run", action="store_true", help="print how many records would go; change nothing"
    )
    forget.add_argument(
        "--yes", action="store_true", help="do not ask (needed when not on a terminal)"
    )
    forget.set_defaults(handler=run_forget)


def run_forget(args: argparse.Namespace) -> int:
    """``recallstore forget --scope K=V``: count, confirm, then forget in one transaction."""
    scope = parse_scope(args.scope)
    if not scope:
        raise CliError("forget needs at least one --scope KEY=VALUE", EXIT_USAGE)
    described = " ".join(f"{key}={value}" for key, value in scope.items())
    store = open_store(args.db, must_exist=True)
    if FORGET_EXTENSION not in store.capabilities().extensions:
        raise CliError(
            f"{args.db}: its store ({type(store).__name__}) lacks the "
            f"'{FORGET_EXTENSION}' extension, so it cannot forget a scope"
        )
    asked = not args.dry_run and not args.yes
    if asked and not sys.stdin.isatty():
        raise CliError(
            "forget erases records for good and stdin is not a terminal to confirm on; "
            "check with --dry-run, then pass --yes",
            EXIT_USAGE,
        )

    async def count() -> int:
        async with store:
            return await _count(store, scope)

    matching = asyncio.run(count())
    where = printable(f"whose scope contains {described}")
    if args.dry_run:
        print(f"{count_records(matching)} {where} would be forgotten from {args.db}")
        return 0
    if not matching:
        print(f"no records {where} in {args.db}; nothing to forget")
        return 0
    if asked and not _confirmed(f"Forget {count_records(matching)} {where} from {args.db}?"):
        print("nothing was forgotten", file=sys.stderr)
        return EXIT_FAILED

    async def forget() -> int:
        async with store:
            return await cast(SupportsForget, store).forget(scope)

    print(f"forgot {count_records(asyncio.run(forget()))} {where}")
    return 0


async def _count(store: MemoryStore, scope: dict[str, str]) -> int:
    """Records whose scope contains ``scope``, invalid and expired ones included."""
    return sum([1 async for _ in iter_records(store, scope)])


def _confirmed(question: str) -> bool:
    """Ask on the terminal; only 'yes' or 'y' goes ahead."""
    print(f"{question} This cannot be undone. [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")
