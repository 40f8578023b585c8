"""``recallstore serve``: the memory lens dashboard and its event stream, on loopback."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import socket

from recallstore.cli._database import open_store
from recallstore.cli._errors import EXIT_USAGE, CliError
from recallstore.errors import MissingDependencyError

_HOST = "127.0.0.1"


def run_serve(args: argparse.Namespace) -> int:
    """``recallstore serve``: the memory lens dashboard and its event stream, on loopback."""
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port must be between 0 and 65535, got {args.port}", EXIT_USAGE)
    if args.token is not None and not args.token.strip():
        raise CliError("--token must not be empty", EXIT_USAGE)
    try:
        import uvicorn

        from recallstore.dashboard import create_dashboard_app
        from recallstore.events import EventBus, ObservedMemoryStore
        from recallstore.events.journal import JournalFeed
        from recallstore.store import JOURNAL_EXTENSION
    except ImportError as exc:
        if isinstance(exc, MissingDependencyError):
            raise
        raise MissingDependencyError("recallstore serve", "server") from exc

    token = args.token or secrets.token_urlsafe(24)
    store = open_store(args.db, must_exist=True)
    try:
        listener = socket.create_server((_HOST, args.port))
    except OSError as exc:
        raise CliError(f"cannot listen on {_HOST}:{args.port}: {exc.strerror}") from None

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
            config = uvicorn.Config(app, log_level="warning", lifespan="on")
            server = uvicorn.Server(config)
            task = asyncio.create_task(server.serve(sockets=[listener]))
            # uvicorn exposes readiness only as a flag; poll it (the task ends on failure).
            while not server.started and not task.done():  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            if server.started:
                port = listener.getsockname()[1]
                print(f"Memory lens: http://{_HOST}:{port}/?token={token}", flush=True)
                print(f"Serving {args.db}; press Ctrl+C to stop.", flush=True)
            await task

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        # uvicorn shuts down cleanly on Ctrl+C, then re-raises it: that is the normal stop.
        pass
    finally:
        listener.close()
    print("Stopped.", flush=True)
    return 0
