"""The record commands: list, search, invalidate, delete (``show`` is in ``_show``)."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from typing import Any

from recallstore._command.database import open_store, parse_scope
from recallstore._command.errors import CliError
from recallstore.cli._output import (
    one_line,
    printable,
    said_columns,
    scope_column,
    status_at,
    status_of,
)
from recallstore.cli._time_flags import TimeFilter, read_time_filter
from recallstore.records import MemoryHit, MemoryRecord, MemorySearchQuery
from recallstore.store import MemoryStore, scope_matches, store_clock


def print_json(value: Any) -> None:
    """``value`` as indented JSON, text kept exact."""
    print(json.dumps(value, indent=2, ensure_ascii=False))


def print_text(line: str) -> None:
    """Print a line that may hold memory text, its control characters made visible."""
    print(printable(line))


def _print_rows(
    hits: Sequence[MemoryHit], *, with_score: bool, time: TimeFilter | None = None
) -> None:
    if time is not None and time.given:
        print(time.describe())
    if not hits:
        print("(no matching memories)")
        return
    zone = None if time is None else time.zone
    as_of = None if time is None else time.as_of
    score_header = f"{'SCORE':>9}  " if with_score else ""
    now_header = f"{'NOW':<11}  " if as_of is not None else ""
    print(
        f"{'ID':<26}  {score_header}{'KIND':<10}  {'STATUS':<11}  {now_header}"
        f"{'SAID':<19}  {'SAVED':<10}  SCOPE  CONTENT"
    )
    for hit in hits:
        record = hit.record
        score = f"{hit.score:9.4g}  " if with_score and hit.score is not None else ""
        status = status_of(record) if as_of is None else status_at(record, as_of)
        now = f"{status_of(record):<11}  " if as_of is not None else ""
        print_text(
            f"{record.id}  {score}{record.kind:<10}  {status:<11}  {now}"
            f"{said_columns(record, zone)}  {scope_column(record.scope)}  "
            f"{one_line(record.content, 72)}"
        )


def _query_from(args: argparse.Namespace, text: str | None, time: TimeFilter) -> MemorySearchQuery:
    return MemorySearchQuery(
        query=text,
        scope=parse_scope(args.scope),
        kinds=tuple(args.kind) if args.kind else None,
        tags=tuple(args.tag) if args.tag else None,
        limit=args.limit,
        include_invalidated=args.all,
        include_expired=args.all,
        observed_after=time.said.start,
        observed_before=time.said.end,
        as_of=time.as_of,
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
    embedder = getattr(args, "embedder", None)  # `search` has --embedder, `list` not
    store = open_store(args.db, must_exist=True, embedder=embedder, read_only=True)
    # The times are read, and refused, before the store is opened: "last week" is read
    # against the store's clock, as the memory tools read it.
    time = read_time_filter(args, store_clock(store)())
    query = _query_from(args, text, time)

    async def go() -> list[MemoryHit]:
        async with store:
            return await store.search(query)

    hits = asyncio.run(go())
    if args.json:
        if text is None:
            print_json([hit.record.model_dump(mode="json") for hit in hits])
        else:
            print_json([hit.model_dump(mode="json") for hit in hits])
    else:
        _print_rows(hits, with_score=text is not None, time=time)
    return 0


async def get_in_scope(store: MemoryStore, record_id: str, scope: dict[str, str]) -> MemoryRecord:
    """The record ``record_id`` when its scope contains ``scope``; else a one-line error."""
    record = await store.get(record_id)
    if record is None or not scope_matches(record.scope, scope):
        raise CliError(
            f"no memory record with id {record_id!r}" + (" in this scope" if scope else "")
        )
    return record


def run_invalidate(args: argparse.Namespace) -> int:
    """``recallstore invalidate ID``: mark a record no longer true (kept for the audit trail)."""
    scope = parse_scope(args.scope)

    async def go() -> bool:
        async with open_store(args.db, must_exist=True) as store:
            record = await get_in_scope(store, args.id, scope)
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
            await get_in_scope(store, args.id, scope)
            await store.delete(args.id)

    asyncio.run(go())
    print(f"deleted {args.id}")
    return 0
