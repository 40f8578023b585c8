"""``recallstore forget``: erase every record of a scope (the store's ``"forget"`` extension)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any, cast

from recallstore._command.database import open_store, parse_scope
from recallstore._command.errors import EXIT_FAILED, EXIT_USAGE, CliError
from recallstore._forget_preview import ForgetPreview, preview_forget
from recallstore.cli._output import count_records, printable
from recallstore.errors import MemoryValidationError
from recallstore.scope_text import format_scope, parse_scope_text
from recallstore.store import FORGET_EXTENSION, SupportsForget

__all__ = ["add_forget_command", "run_forget"]


def add_forget_command(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``recallstore forget`` to the command tree (``parents`` give ``--db``)."""
    forget = commands.add_parser(
        "forget", parents=parents, help="erase every record of a scope (asks for the scope first)"
    )
    forget.add_argument(
        "--scope",
        action="append",
        required=True,
        metavar="KEY=VALUE",
        help="records whose scope contains this pair (repeatable; at least one)",
    )
    forget.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would go (records by kind, plans, journal entries); change nothing",
    )
    forget.add_argument(
        "--yes", action="store_true", help="do not ask (needed when not on a terminal)"
    )
    forget.set_defaults(handler=run_forget)


def run_forget(args: argparse.Namespace) -> int:
    """``recallstore forget --scope K=V``: preview, confirm, then forget in one transaction.

    The preview (records by kind, consolidation plans and journal entries affected) is
    :func:`recallstore._forget_preview.preview_forget`'s, the memory lens's too. On a
    terminal the operator confirms by typing the scope (``user=alice``).
    """
    scope = parse_scope(args.scope)
    if not scope:
        raise CliError("forget needs at least one --scope KEY=VALUE", EXIT_USAGE)
    described = format_scope(scope)
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

    async def preview() -> ForgetPreview:
        async with store:
            return await preview_forget(store, scope)

    found = asyncio.run(preview())
    where = printable(f"whose scope contains {described}")
    details = [printable(f"  {line}") for line in found.describe()]
    if args.dry_run:
        print(f"{count_records(found.total)} {where} would be forgotten from {args.db}")
        print("\n".join(details))
        return 0
    if not found.touches_anything:
        print(f"no records {where} in {args.db}; nothing to forget")
        return 0
    if asked:
        print(f"Forgetting {described} from {args.db} takes:", file=sys.stderr)
        print("\n".join(details), file=sys.stderr)
        if not _confirmed(scope, printable(described)):
            print("nothing was forgotten", file=sys.stderr)
            return EXIT_FAILED

    async def forget() -> int:
        async with store:
            return await cast(SupportsForget, store).forget(scope)

    print(f"forgot {count_records(asyncio.run(forget()))} {where}")
    return 0


def _confirmed(scope: dict[str, str], described: str) -> bool:
    """Ask on the terminal; only the scope itself, typed again, goes ahead."""
    print(
        f"This cannot be undone. Type the scope ({described}) to forget it: ",
        end="",
        file=sys.stderr,
        flush=True,
    )
    answer = sys.stdin.readline().strip()
    try:
        return bool(answer) and parse_scope_text([answer]) == scope
    except MemoryValidationError:
        return False
