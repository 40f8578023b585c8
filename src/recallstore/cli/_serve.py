"""``recallstore serve``: the memory lens dashboard and its event stream, on loopback."""

from __future__ import annotations

import argparse
import contextlib

from recallstore._command.asgi import (
    HOST,
    http_token,
    loopback_listener,
    run_until_stopped,
    serve_asgi,
)
from recallstore._command.database import open_store, store_file
from recallstore.backends.journal import journal_content, quiet_reads
from recallstore.errors import MissingDependencyError


def run_serve(args: argparse.Namespace) -> int:
    """``recallstore serve``: the memory lens dashboard and its event stream, on loopback."""
    token = http_token(args.port, args.token)
    try:
        import uvicorn  # noqa: F401  (a missing extra fails before the store is opened)

        from recallstore.dashboard import create_dashboard_app
        from recallstore.events import EventBus, ObservedMemoryStore
        from recallstore.events.journal import JournalFeed
        from recallstore.store import JOURNAL_EXTENSION
    except ImportError as exc:
        if isinstance(exc, MissingDependencyError):
            raise
        raise MissingDependencyError("recallstore serve", "server") from exc

    store = open_store(args.db, must_exist=True, embedder=args.embedder)
    from recallstore.backends.sqlite.sidecars import can_write  # a path's question, no store's

    path = store_file(store)
    if path is not None and not can_write(path):
        # A file this process cannot write: the lens still shows it (its invalidate and
        # delete buttons then answer that the store is read-only).
        store = open_store(args.db, must_exist=True, embedder=args.embedder, read_only=True)
    # The lens's own page views and searches are looking, not memory events: unjournaled
    # (docs/events.md, "What is journaled"); its invalidations and deletes are journaled.
    quiet_reads(store)
    if args.include_content:
        # With a journal the lens streams it: the lens's own writes must keep content
        # there, or none would show (other writers show it only if they opted in).
        journal_content(store)
    listener = loopback_listener(args.port)

    async def serve() -> None:
        async with store, contextlib.AsyncExitStack() as stack:
            # With a journal, the feed shows every process's events, numbered by the
            # journal (so Last-Event-ID survives restarts); else only the lens's own.
            journaled = JOURNAL_EXTENSION in store.capabilities().extensions
            bus = EventBus(numbered_by="journal" if journaled else "bus")
            opt_in = {
                "include_content": args.include_content,
                "include_query_text": args.include_content,
            }
            history = None
            if journaled:
                feed = await stack.enter_async_context(JournalFeed(store, bus, **opt_in))
                history = feed.history
            observed = ObservedMemoryStore(store, bus, **opt_in)
            app = create_dashboard_app(observed, bus, token=token, history=history)
            await serve_asgi(app, listener, announce)

    def announce(port: int) -> None:
        print(f"Memory lens: http://{HOST}:{port}/?token={token}", flush=True)
        print(f"Serving {args.db}; press Ctrl+C to stop.", flush=True)

    return run_until_stopped(serve, listener)
