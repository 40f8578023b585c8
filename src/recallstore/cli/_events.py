"""``recallstore events tail``: a store's journal of memory events, in the terminal."""

from __future__ import annotations

import argparse
import asyncio
import json

from recallstore._command.database import open_store, parse_scope
from recallstore._command.errors import EXIT_INTERRUPTED
from recallstore.cli._output import printable, scope_column
from recallstore.events.journal import tail_events
from recallstore.events.models import MemoryEvent


def event_line(event: MemoryEvent) -> str:
    """One line per event: id, time, type, what it did, scope, record ids."""
    data = event.data.model_dump()
    what = data.get("operation") or data.get("mode") or "recall"
    ids = data.get("record_ids") or data.get("result_ids") or ()
    count = data.get("count", data.get("result_count", len(ids)))
    stamp = event.timestamp.strftime("%Y-%m-%d %H:%M:%S")
    kind = event.type.rsplit(".", 1)[-1]
    failed = "" if data.get("ok", True) else f" failed:{data.get('error')}"
    return (
        f"{event.id:>8}  {stamp}  {kind:<6} {what:<10} {count:>3}{failed}  "
        f"{scope_column(event.scope)}  {' '.join(ids)}"
    )


EVENT_HEADER = f"{'ID':>8}  {'TIME':<19}  {'TYPE':<6} {'WHAT':<10} {'N':>3}  SCOPE  RECORD IDS"
"""The column names over :func:`event_line`'s lines."""


def run_tail(args: argparse.Namespace) -> int:
    """``recallstore events tail``: the newest events, then (``--follow``) new ones."""
    scope = parse_scope(args.scope)
    store = open_store(args.db, must_exist=True, read_only=True)

    async def go() -> None:
        if not args.json:
            print(EVENT_HEADER, flush=True)
        async with store:
            async for event in tail_events(
                store,
                last=args.last,
                follow=args.follow,
                scope=scope,
                include_content=args.include_content,
                include_query_text=args.include_content,
            ):
                if args.json:
                    print(json.dumps(event.model_dump(mode="json"), ensure_ascii=False), flush=True)
                else:
                    print(printable(event_line(event)), flush=True)

    try:
        asyncio.run(go())
    except KeyboardInterrupt:
        # Ctrl+C is how a follow ends, as for `tail -f`: the shell's 130, no message.
        return EXIT_INTERRUPTED
    return 0
