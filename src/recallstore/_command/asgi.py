"""Serving an ASGI app with uvicorn on a socket already bound to 127.0.0.1."""

from __future__ import annotations

import asyncio
import secrets
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from recallstore._command.errors import EXIT_USAGE, CliError
from recallstore._command.http_guard import MIN_TOKEN_CHARS, LoopbackGuard
from recallstore.tokens import token_problem

HOST = "127.0.0.1"
"""The only address recallstore's servers listen on."""


def http_token(port: int, token: str | None, *, prog: str = "recallstore") -> str:
    """The access token for a loopback server: ``token``, or a fresh random one.

    Checks ``--port`` and ``--token`` first (a usage error names the bad one).
    """
    if not 0 <= port <= 65535:
        raise CliError(f"--port must be between 0 and 65535, got {port}", EXIT_USAGE, prog=prog)
    if token is not None and not token.strip():
        raise CliError("--token must not be empty", EXIT_USAGE, prog=prog)
    problem = None if token is None else token_problem(token)
    if problem is not None:
        # Refused now: such a token could never log in (the ?token= address, a header
        # or the cookie would alter or refuse it).
        raise CliError(f"--token {problem}", EXIT_USAGE, prog=prog)
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise CliError(
            f"--token must be at least {MIN_TOKEN_CHARS} characters, got {len(token)} "
            "(leave it out for a fresh random one)",
            EXIT_USAGE,
            prog=prog,
        )
    return token or secrets.token_urlsafe(24)


def loopback_listener(port: int) -> socket.socket:
    """A socket bound to ``127.0.0.1:port`` (0: any free port), or a one-line CliError."""
    try:
        return socket.create_server((HOST, port))
    except OSError as exc:
        raise CliError(f"cannot listen on {HOST}:{port}: {exc.strerror}") from None


async def serve_asgi(app: Any, listener: socket.socket, announce: Callable[[int], None]) -> None:
    """Run ``app`` on ``listener`` until stopped; ``announce(port)`` once it accepts requests.

    Every request passes :class:`LoopbackGuard` first (Host, Origin, one Authorization).
    """
    import uvicorn

    guarded = LoopbackGuard(app, listener.getsockname()[1])
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[listener]))
    # uvicorn exposes readiness only as a flag; poll it (the task ends on failure).
    while not server.started and not task.done():  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    if server.started:
        announce(listener.getsockname()[1])
    await task


def run_until_stopped(serve: Callable[[], Awaitable[None]], listener: socket.socket) -> int:
    """Run ``serve()`` until it ends or Ctrl+C; close ``listener``; say "Stopped."."""
    try:
        asyncio.run(_awaited(serve))
    except KeyboardInterrupt:
        # uvicorn shuts down cleanly on Ctrl+C, then re-raises it: that is the normal stop.
        pass
    finally:
        listener.close()
    print("Stopped.", flush=True)
    return 0


async def _awaited(serve: Callable[[], Awaitable[None]]) -> None:
    await serve()
