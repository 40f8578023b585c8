"""``recallstore consolidate``: plan, apply or revert the consolidation of one scope."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from collections import Counter
from typing import Any

from recallstore._command.database import open_store, parse_scope
from recallstore._command.errors import EXIT_USAGE, CliError
from recallstore.cli._numbers import at_least
from recallstore.cli._output import printable, scope_column
from recallstore.consolidation import (
    DEFAULT_CAP,
    DEFAULT_PROPOSERS,
    Plan,
    Proposer,
    SlotMatch,
    apply_plan,
    consolidate,
    read_kept_plans,
    revert_plan,
)
from recallstore.jsonl import iter_records
from recallstore.store import REVISE_EXTENSION, MemoryStore
from recallstore.values import canonical_scope

__all__ = ["add_consolidate_command", "run_consolidate"]


def add_consolidate_command(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``recallstore consolidate`` to the command tree (``parents`` give ``--db``)."""
    command = commands.add_parser(
        "consolidate",
        parents=parents,
        help="plan (default), apply or revert the merging of duplicates in one scope",
    )
    command.add_argument(
        "--scope",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the exact scope to consolidate (repeatable; at least one, except for --list "
        "and --revert: --list without it lists every plan)",
    )
    action = command.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="apply the plan it makes")
    action.add_argument("--revert", metavar="PLAN_ID", help="restore what an applied plan changed")
    action.add_argument("--list", action="store_true", help="list the applied plans of the scope")
    command.add_argument(
        "--slots",
        action="store_true",
        help="also supersede statements with one changed span (I love X -> I hate X)",
    )
    command.add_argument(
        "--cap",
        type=at_least(1),
        default=DEFAULT_CAP,
        help=f"changes per run (default {DEFAULT_CAP})",
    )
    command.add_argument(
        "--json",
        action="store_true",
        help="print the plan as one JSON document (what was done goes to stderr)",
    )
    command.set_defaults(handler=run_consolidate)


def run_consolidate(args: argparse.Namespace) -> int:
    """Show the plan (a dry run), or apply it, revert one, or list the applied ones."""
    scope = parse_scope(args.scope)
    if not scope and not (args.list or args.revert):
        raise CliError("consolidate needs at least one --scope KEY=VALUE", EXIT_USAGE)
    store = open_store(args.db, must_exist=True)
    changes_store = args.apply or args.revert or args.list
    if changes_store and REVISE_EXTENSION not in store.capabilities().extensions:
        raise CliError(
            f"{args.db}: its store ({type(store).__name__}) lacks the "
            f"'{REVISE_EXTENSION}' extension, so it cannot keep consolidation plans"
        )
    proposers: tuple[Proposer, ...] = DEFAULT_PROPOSERS
    if args.slots:
        proposers = (*DEFAULT_PROPOSERS, SlotMatch(by_text=True))

    def say(line: str) -> None:
        # With --json, stdout holds the plan alone (one JSON document); what was done
        # goes to stderr.
        print(printable(line), file=sys.stderr if args.json else sys.stdout)

    async def run() -> int:
        async with store:
            if args.list:
                kept = await read_kept_plans(store, scope)
                for plan, revision in kept.plans:
                    state = "applied" if revision.reverted_at is None else "reverted"
                    line = f"{plan.id} {state} {len(plan.changes)} change(s)"
                    if plan.forgotten:
                        line += f", {len(plan.forgotten)} record(s) forgotten since"
                    print(printable(line))
                for revision, reason in kept.skipped:
                    print(printable(f"{revision.id} skipped: {reason}"))
                return 0
            if args.revert:
                plan = await revert_plan(store, args.revert)
                _show(plan, args.json)
                say(f"reverted {plan.id}: {len(plan.changes)} record(s) restored")
                return 0
            plan = await consolidate(store, scope, proposers=proposers, cap=args.cap)
            _show(plan, args.json)
            if not plan.operations and not plan.rejected:
                for line in await _why_nothing(store, scope):
                    say(line)
            if not args.apply:
                say("dry run: nothing changed (add --apply to apply this plan)")
            elif plan.only_noops:
                say("nothing to apply")
            else:
                await apply_plan(store, plan)
                say(f"applied {plan.id}; undo with --revert {plan.id}")
            return 0

    return asyncio.run(run())


def _show(plan: Plan, as_json: bool) -> None:
    if as_json:
        print(json.dumps(plan.model_dump(mode="json"), ensure_ascii=False, indent=2))
    else:
        for line in plan.diff().splitlines():
            print(printable(line))


async def _why_nothing(store: MemoryStore, scope: dict[str, str]) -> list[str]:
    """Why a plan has nothing in it, when the reason is the scope: consolidation works on
    one exact scope, and the records may all lie in narrower ones (tenant=acme given, the
    records in tenant=acme, user=...)."""
    pairs = canonical_scope(scope)
    narrower: Counter[tuple[tuple[str, str], ...]] = Counter()
    exact = 0
    async for record in iter_records(store, pairs):
        if record.scope == pairs:
            exact += not record.is_invalidated
        else:
            narrower[tuple(record.scope.items())] += 1
    if exact:
        return []  # valid records there, nothing to merge: the plan says so itself
    given = scope_column(pairs)
    if not narrower:
        return [f"no valid record has exactly the scope {given}"]
    common = narrower.most_common(3)
    shown = "; ".join(f"{scope_column(dict(items))} ({count})" for items, count in common)
    more = f" and {len(narrower) - 3} more" if len(narrower) > 3 else ""
    flags = " ".join(f"--scope {shlex.quote(f'{k}={v}')}" for k, v in common[0][0])
    return [
        f"no valid record has exactly the scope {given}: consolidate works on one exact "
        f"scope, and the {sum(narrower.values())} record(s) within it lie in "
        f"{len(narrower)} narrower scope(s): {shown}{more}",
        f"name every pair of one of them, e.g. {flags}",
    ]
