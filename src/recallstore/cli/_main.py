"""The argparse tree and ``main``; ``_command.main`` turns every mistake into one line."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from recallstore._command.main import CommandParser, db_option, embedder_option, run_command
from recallstore._version import __version__
from recallstore.cli import (
    _capture,
    _consolidate,
    _demo,
    _distil,
    _events,
    _forget,
    _manifest,
    _mcp,
    _records,
    _reembed,
    _serve,
    _show,
    _transfer,
)
from recallstore.cli._numbers import at_least
from recallstore.cli._time_flags import time_options
from recallstore.records import MAX_LIMIT, MEMORY_KINDS


def _store_options() -> CommandParser:
    parent = CommandParser(add_help=False, parents=[db_option()])
    parent.add_argument(
        "--scope",
        action="append",
        metavar="KEY=VALUE",
        help="only records whose scope contains this pair (repeatable)",
    )
    return parent


def _filter_options() -> CommandParser:
    parent = CommandParser(add_help=False)
    parent.add_argument(
        "--kind", action="append", choices=MEMORY_KINDS, help="only this kind (repeatable)"
    )
    parent.add_argument(
        "--tag", action="append", help="only records carrying this tag (repeatable)"
    )
    parent.add_argument(
        "--limit",
        type=at_least(1, MAX_LIMIT),
        default=50,
        help=f"at most this many (default 50, at most {MAX_LIMIT})",
    )
    parent.add_argument(
        "--all", action="store_true", help="include invalidated, superseded and expired records"
    )
    parent.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parent


def build_parser() -> argparse.ArgumentParser:
    """The ``recallstore`` command tree (documented, command by command, in docs/cli.md)."""
    parser = CommandParser(
        prog="recallstore",
        description="Cross-session memory for LLM agents: inspect, correct, move and watch it.",
    )
    parser.add_argument("--version", action="version", version=f"recallstore {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    db = db_option()
    store = _store_options()
    filters = _filter_options()
    times = time_options()
    embedder = embedder_option()

    demo = commands.add_parser(
        "demo", parents=[db], help="run two scripted conversations with memory"
    )
    demo.set_defaults(handler=_demo.run_demo_command)

    serve = commands.add_parser(
        "serve", parents=[db, embedder], help="open the memory lens dashboard on 127.0.0.1"
    )
    serve.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765)")
    serve.add_argument("--token", help="access token (default: a fresh random one)")
    serve.add_argument(
        "--include-content",
        action="store_true",
        help="put record content and query text into streamed events (off by default)",
    )
    serve.set_defaults(handler=_serve.run_serve)

    _mcp.add_mcp_command(commands, [db, embedder])

    listing = commands.add_parser(
        "list", parents=[store, filters, times], help="list records, newest first"
    )
    listing.set_defaults(handler=_records.run_list)

    search = commands.add_parser(
        "search",
        parents=[store, filters, times, embedder],
        help="keyword search (hybrid with --embedder), best match first",
    )
    search.add_argument("query", metavar="QUERY", help="the search text")
    search.set_defaults(handler=_records.run_search)

    show = commands.add_parser(
        "show",
        parents=[store],
        help="one record, the consolidation plans that changed it, and its invalidation chain",
    )
    show.add_argument("id", metavar="ID", help="the record id")
    show.add_argument("--json", action="store_true", help="print JSON instead of text")
    show.set_defaults(handler=_show.run_show)

    invalidate = commands.add_parser(
        "invalidate", parents=[store], help="mark a record as no longer true"
    )
    invalidate.add_argument("id", metavar="ID", help="the record id")
    invalidate.add_argument("--reason", help="why it is no longer true")
    invalidate.set_defaults(handler=_records.run_invalidate)

    delete = commands.add_parser("delete", parents=[store], help="forget a record completely")
    delete.add_argument("id", metavar="ID", help="the record id")
    delete.set_defaults(handler=_records.run_delete)

    _forget.add_forget_command(commands, [db])
    _capture.add_capture_command(commands, [db])
    _consolidate.add_consolidate_command(commands, [db])
    _distil.add_distil_command(commands, [db])

    export = commands.add_parser(
        "export", parents=[store], help="write records as JSONL, oldest first"
    )
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    export.add_argument("--progress", action="store_true", help="draw a progress bar on stderr")
    export.set_defaults(handler=_transfer.run_export)

    import_ = commands.add_parser(
        "import", parents=[store], help="insert exported JSONL records unchanged"
    )
    import_.add_argument("file", metavar="FILE", help="a JSONL export, or - for stdin")
    import_.add_argument(
        "--batch-size",
        type=at_least(1),
        default=500,
        help="records per transaction (default 500)",
    )
    import_.add_argument("--progress", action="store_true", help="draw a progress bar on stderr")
    import_.set_defaults(handler=_transfer.run_import)

    reembed = commands.add_parser(
        "reembed",
        parents=[db],
        help="embed every record with another model, for hybrid search (one transaction)",
    )
    reembed.add_argument(
        "--embedder",
        required=True,
        metavar="default|MODULE:FACTORY",
        help="the new embedder: 'default' (recallstore's own model, the semantic extra) or "
        "FACTORY() in MODULE, e.g. myapp.models:embedder",
    )
    reembed.add_argument(
        "--batch-size",
        type=at_least(1),
        default=256,
        help="texts per embedder call (default 256)",
    )
    reembed.add_argument(
        "--progress", action="store_true", help="draw a progress bar even when not on a terminal"
    )
    reembed.set_defaults(handler=_reembed.run_reembed)

    events = commands.add_parser("events", help="the event catalogue and the event journal")
    event_commands = events.add_subparsers(dest="events_command", metavar="COMMAND")
    manifest = event_commands.add_parser(
        "manifest", help="check or regenerate event_manifest.json and docs/events.md"
    )
    mode = manifest.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="fail when the file is out of date")
    mode.add_argument("--write", action="store_true", help="regenerate the file")
    manifest.add_argument(
        "--manifest",
        default="event_manifest.json",
        metavar="FILE",
        help="the manifest file (default: ./event_manifest.json)",
    )
    manifest.add_argument(
        "--docs",
        default=os.path.join("docs", "events.md"),
        metavar="FILE",
        help="the events reference generated from it (default: ./docs/events.md)",
    )
    manifest.set_defaults(handler=_manifest.run_manifest)

    tail = event_commands.add_parser(
        "tail",
        parents=[store],
        help="print the store's journal of memory events (every process's)",
    )
    tail.add_argument(
        "--last",
        type=at_least(0),
        default=20,
        help="start with the newest N events (default 20)",
    )
    tail.add_argument(
        "-f", "--follow", action="store_true", help="keep printing events as they happen"
    )
    tail.add_argument("--json", action="store_true", help="one JSON envelope per line")
    tail.add_argument(
        "--include-content",
        action="store_true",
        help="show content, reasons and query text when the journal holds them",
    )
    tail.set_defaults(handler=_events.run_tail)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``recallstore`` command; returns the process exit code."""
    return run_command(build_parser(), argv)
