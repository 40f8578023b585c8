"""The record commands: list, search, show, invalidate, delete."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
from collections.abc import Sequence
from typing import Any, cast

from recallstore._command.database import open_store, parse_scope
from recallstore._command.errors import CliError
from recallstore.chain import supersede_chain
from recallstore.cli._output import one_line, printable, scope_column, short_time, status_of
from recallstore.records import MemoryHit, MemoryRecord, MemorySearchQuery
from recallstore.store import REVISE_EXTENSION, MemoryStore, SupportsRevise, scope_matches


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _print_text(line: str) -> None:
    """Print a line that may hold memory text, its control characters made visible."""
    print(printable(line))


def _print_rows(hits: Sequence[MemoryHit], *, with_score: bool) -> None:
    if not hits:
        print("(no matching memories)")
        return
    score_header = f"{'SCORE':>9}  " if with_score else ""
    print(
        f"{'ID':<26}  {score_header}{'KIND':<10}  {'STATUS':<10}  {'CREATED':<19}  SCOPE  CONTENT"
    )
    for hit in hits:
        record = hit.record
        score = f"{hit.score:9.4g}  " if with_score and hit.score is not None else ""
        _print_text(
            f"{record.id}  {score}{record.kind:<10}  {status_of(record):<10}  "
            f"{short_time(record)}  {scope_column(record.scope)}  {one_line(record.content, 72)}"
        )


def _query_from(args: argparse.Namespace, text: str | None) -> MemorySearchQuery:
    return MemorySearchQuery(
        query=text,
        scope=parse_scope(args.scope),
        kinds=tuple(args.kind) if args.kind else None,
        tags=tuple(args.tag) if args.tag else None,
        limit=args.limit,
        include_invalidated=args.all,
        include_expired=args.all,
    )


def run_list(args: argparse.Namespace) -> int:
    """``recallstore list``: the newest records first."""
    return _run_search(args, None)


def run_search(args: argparse.Namespace) -> int:
    """``recallstore search QUERY``: keyword (or, with ``--embedder``, hybrid) search."""
    if not args.query.strip():
        raise CliError("search needs query text (use 'recallstore list' to list records)", 2)
    return _run_search(args, args.query)


def _run_search(args: argparse.Namespace, text: str | None) -> int:
    query = _query_from(args, text)

    async def go() -> list[MemoryHit]:
        embedder = getattr(args, "embedder", None)  # `search` has --embedder, `list` not
        store = open_store(args.db, must_exist=True, embedder=embedder, read_only=True)
        async with store:
            return await store.search(query)

    hits = asyncio.run(go())
    if args.json:
        if text is None:
            _print_json([hit.record.model_dump(mode="json") for hit in hits])
        else:
            _print_json([hit.model_dump(mode="json") for hit in hits])
    else:
        _print_rows(hits, with_score=text is not None)
    return 0


async def _get_in_scope(store: MemoryStore, record_id: str, scope: dict[str, str]) -> MemoryRecord:
    record = await store.get(record_id)
    if record is None or not scope_matches(record.scope, scope):
        raise CliError(
            f"no memory record with id {record_id!r}" + (" in this scope" if scope else "")
        )
    return record


async def invalidation_chain(store: MemoryStore, record: MemoryRecord) -> list[MemoryRecord]:
    """The supersede chain through ``record``, oldest first (``record`` itself included).

    Every record of its scope is searched for predecessors; deleted links are left out.
    """
    chain = await supersede_chain(store, record, complete=True)
    return [link.record for link in chain.links if link.record is not None]


def run_show(args: argparse.Namespace) -> int:
    """``recallstore show ID``: one record and its invalidation chain."""
    scope = parse_scope(args.scope)

    async def go() -> tuple[MemoryRecord, list[MemoryRecord], str | None]:
        async with open_store(args.db, must_exist=True, read_only=True) as store:
            record = await _get_in_scope(store, args.id, scope)
            chain = await invalidation_chain(store, record)
            return record, chain, await _revised_by(store, record)

    record, chain, plan = asyncio.run(go())
    if args.json:
        _print_json(
            {
                "record": record.model_dump(mode="json"),
                "chain": [item.model_dump(mode="json") for item in chain],
                "plan": plan,
            }
        )
        return 0
    _print_record(record, plan)
    if len(chain) > 1:
        print("\nchain (oldest first):")
        for item in chain:
            marker = "*" if item.id == record.id else " "
            _print_text(
                f"  {marker} {item.id}  {status_of(item):<10}  {short_time(item)}  "
                f"{one_line(item.content, 60)}"
            )
    return 0


def _stamp(value: Any) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def _revised_by(store: MemoryStore, record: MemoryRecord) -> str | None:
    """The id of the applied consolidation plan (a kept revision) that invalidated
    ``record``, or None: read from the revisions the store keeps, not from the reason."""
    if record.invalid_at is None or REVISE_EXTENSION not in store.capabilities().extensions:
        return None
    revising = cast(SupportsRevise, store)
    for revision in await revising.revisions(record.scope):  # newest first
        if revision.reverted_at is None and any(u.id == record.id for u in revision.undo):
            return revision.id
    return None


def _print_record(record: MemoryRecord, plan: str | None = None) -> None:
    status = status_of(record)
    if record.superseded_by is not None:
        status += f" by {record.superseded_by} at {_stamp(record.invalid_at)}"
    elif record.invalid_at is not None:
        status += f" at {_stamp(record.invalid_at)}"
    provenance = "-"
    if record.provenance is not None:
        parts = record.provenance.model_dump(exclude_none=True)
        provenance = " ".join(f"{key}={value}" for key, value in parts.items()) or "-"
    rows = [
        ("id", record.id),
        ("kind", record.kind),
        ("scope", scope_column(record.scope)),
        ("status", status),
        *([("reason", record.invalid_reason)] if record.invalid_reason else []),
        *([("plan", _plan_row(plan, record.scope))] if plan else []),
        ("created", _stamp(record.created_at)),
        ("updated", _stamp(record.updated_at)),
        ("expires", _stamp(record.expires_at)),
        ("tags", ", ".join(record.tags) or "-"),
        ("provenance", provenance),
    ]
    if record.target is not None:
        rows.append(("target", json.dumps(record.target.model_dump(mode="json"))))
    if record.payload is not None:
        rows.append(("payload", json.dumps(record.payload, ensure_ascii=False)))
    for label, value in rows:
        _print_text(f"{label + ':':<12}{value}")
    print("content:")
    for line in record.content.splitlines():
        _print_text(f"  {line}")


def _plan_row(plan: str, scope: dict[str, str]) -> str:
    flags = " ".join(f"--scope {shlex.quote(f'{key}={value}')}" for key, value in scope.items())
    return f"{plan} (undo: recallstore consolidate {flags} --revert {plan})"


def run_invalidate(args: argparse.Namespace) -> int:
    """``recallstore invalidate ID``: mark a record no longer true (kept for the audit trail)."""
    scope = parse_scope(args.scope)

    async def go() -> bool:
        async with open_store(args.db, must_exist=True) as store:
            record = await _get_in_scope(store, args.id, scope)
            if record.invalid_at is not None:
                return False
            await store.invalidate(args.id, args.reason)
            return True

    if asyncio.run(go()):
        print(f"invalidated {args.id}")
    else:
        print(f"{args.id} was already invalid; nothing changed")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    """``recallstore delete ID``: forget a record completely."""
    scope = parse_scope(args.scope)

    async def go() -> None:
        async with open_store(args.db, must_exist=True) as store:
            await _get_in_scope(store, args.id, scope)
            await store.delete(args.id)

    asyncio.run(go())
    print(f"deleted {args.id}")
    return 0
