"""``recallstore distil``: plan, apply or revert the facts a model draws from the
captured conversations of one scope."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
from typing import Any

from recallstore._command.database import open_store, parse_scope
from recallstore._command.errors import EXIT_USAGE, CliError
from recallstore.cli._numbers import at_least
from recallstore.cli._output import printable
from recallstore.consolidation import (
    DEFAULT_FACT_CAP,
    Distillation,
    Distiller,
    apply_distillation,
    distil,
    kept_distillations,
    revert_distillation,
)
from recallstore.store import REVISE_EXTENSION

__all__ = ["NO_MODEL", "add_distil_command", "run_distil"]

NO_MODEL = (
    "distil needs a model, and none is plugged in: recallstore never runs one on its own. "
    "Pass --model NAME (a model name pydantic-ai knows, e.g. --model openai:gpt-4o; "
    "install recallstore[pydantic-ai] and set the provider's API key), or "
    "--distiller MODULE:ATTRIBUTE naming, in your own code, a pydantic-ai model, a "
    "distiller (recallstore.consolidation.Distiller) or a function returning one "
    "(docs/learning.md)"
)
"""What ``recallstore distil`` says when no model is given."""


def add_distil_command(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``recallstore distil`` to the command tree (``parents`` give ``--db``)."""
    command = commands.add_parser(
        "distil",
        parents=parents,
        help="plan (default), apply or revert facts a model draws from captured conversations",
    )
    command.add_argument(
        "--scope",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the exact scope whose captured conversations are read (repeatable; at least "
        "one, except for --list and --revert)",
    )
    model = command.add_mutually_exclusive_group()
    model.add_argument("--model", metavar="NAME", help="a pydantic-ai model name")
    model.add_argument(
        "--distiller",
        metavar="MODULE:ATTRIBUTE",
        help="a pydantic-ai model, a distiller, or a function returning one, from your code",
    )
    action = command.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="apply the plan it makes")
    action.add_argument(
        "--revert",
        metavar="PLAN_ID",
        help="invalidate what an applied distillation added and withdraw its corroborations",
    )
    action.add_argument("--list", action="store_true", help="list the applied distillations")
    command.add_argument(
        "--cap",
        type=at_least(1),
        default=DEFAULT_FACT_CAP,
        help=f"facts per run (default {DEFAULT_FACT_CAP})",
    )
    command.add_argument(
        "--json",
        action="store_true",
        help="print the plan as one JSON document (what was done goes to stderr)",
    )
    command.set_defaults(handler=run_distil)


def _distiller(args: argparse.Namespace) -> Distiller:
    """The distiller the options name; :data:`NO_MODEL` when they name none."""
    if args.model is None and args.distiller is None:
        raise CliError(NO_MODEL, EXIT_USAGE)
    from recallstore.adapters.pydantic_ai_distiller import ModelDistiller

    if args.model is not None:
        return ModelDistiller(args.model, name=args.model)
    module_name, _, attribute = str(args.distiller).partition(":")
    if not module_name or not attribute:
        raise CliError(f"--distiller {args.distiller!r}: expected MODULE:ATTRIBUTE", EXIT_USAGE)
    if os.getcwd() not in sys.path:  # as ``python -m``: the host's modules where it runs
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise CliError(f"--distiller {args.distiller!r}: {exc}", EXIT_USAGE) from None
    if isinstance(found, type) or (
        callable(found) and not isinstance(found, Distiller) and not _is_model(found)
    ):
        found = found()
    if isinstance(found, Distiller):
        return found
    if _is_model(found):
        return ModelDistiller(found, name=args.distiller)
    raise CliError(
        f"--distiller {args.distiller!r} names a value of type {type(found).__name__}, "
        "neither a pydantic-ai model nor a distiller",
        EXIT_USAGE,
    )


def _is_model(value: object) -> bool:
    from pydantic_ai.models import Model

    return isinstance(value, Model)


def run_distil(args: argparse.Namespace) -> int:
    """Show the plan (a dry run), or apply it, revert one, or list the applied ones."""
    scope = parse_scope(args.scope)
    if not scope and not (args.list or args.revert):
        raise CliError("distil needs at least one --scope KEY=VALUE", EXIT_USAGE)
    distiller = None if (args.list or args.revert) else _distiller(args)
    store = open_store(args.db, must_exist=True)
    if (args.apply or args.revert) and REVISE_EXTENSION not in store.capabilities().extensions:
        raise CliError(
            f"{args.db}: its store ({type(store).__name__}) lacks the "
            f"'{REVISE_EXTENSION}' extension, so a distillation could not be reverted"
        )

    def say(line: str) -> None:
        print(printable(line), file=sys.stderr if args.json else sys.stdout)

    async def run() -> int:
        async with store:
            if args.list:
                for kept in await kept_distillations(store, scope):
                    state = "reverted" if kept.reverted else "applied"
                    print(printable(f"{kept.plan_id} {state} {len(kept.records)} fact(s)"))
                return 0
            if args.revert:
                reverted = await revert_distillation(store, args.revert, scope)
                facts = 0 if reverted.revision is None else len(reverted.revision.undo)
                say(
                    f"reverted {args.revert}: {facts} fact(s) invalidated, "
                    f"{len(reverted.withdrawn)} corroboration(s) withdrawn"
                )
                return 0
            assert distiller is not None
            plan = await distil(store, scope, [distiller], cap=args.cap)
            _show(plan, args.json)
            if not args.apply:
                say("dry run: nothing changed (add --apply to apply this plan)")
            elif not plan.facts:
                say("nothing to apply")
            else:
                applied = await apply_distillation(store, plan)
                say(
                    f"applied {plan.id}: {len(applied.added)} fact(s) added, "
                    f"{len(applied.corroborated)} corroborated; undo with --revert {plan.id}"
                )
            return 0

    return asyncio.run(run())


def _show(plan: Distillation, as_json: bool) -> None:
    if as_json:
        print(json.dumps(plan.model_dump(mode="json"), ensure_ascii=False, indent=2))
    else:
        for line in plan.diff().splitlines():
            print(printable(line))
