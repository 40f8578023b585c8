"""``recallstore serve``: the memory lens dashboard and its event stream, on loopback."""

from __future__ import annotations

import argparse

from recallstore.cli._asgi import HOST, http_token, loopback_listener, run_until_stopped, serve_asgi
from recallstore.cli._database import open_store
from recallstore.errors import MissingDependencyError


def run_serve(args: argparse.Namespace) -> int:
    """``recallstore serve``: the memory lens dashboard and its event stream, on loopback."""
    token = http_token(args.port, args.token)
    try:
        import uvicorn  # noqa: F401  (a missing extra fails before the store is opened)

        from recallstore.dashboard import create_dashboard_app
        from recallstore.events import EventBus, ObservedMemoryStore
    except ImportError as exc:
        if isinstance(exc, MissingDependencyError):
            raise
        raise MissingDependencyError("recallstore serve", "server") from exc

    store = open_store(args.db, must_exist=True)
    listener = loopback_listener(args.port)

    async def serve() -> None:
        async with store:
            bus = EventBus()
            observed = ObservedMemoryStore(
                store,
                bus,
                include_content=args.include_content,
                include_query_text=args.include_content,
            )
            app = create_dashboard_app(observed, bus, token=token)
            await serve_asgi(app, listener, announce)

    def announce(port: int) -> None:
        print(f"Memory lens: http://{HOST}:{port}/?token={token}", flush=True)
        print(f"Serving {args.db}; press Ctrl+C to stop.", flush=True)

    return run_until_stopped(serve, listener)
