"""``recallstore mcp``: one scope's memory as an MCP server, over stdio or streamable HTTP.

The command's options and its run live here, beside the server, so that ``python -m
recallstore.adapters.mcp`` runs it without the CLI; ``recallstore mcp`` registers the
same options (``cli._mcp``). The server itself comes from a callable the caller passes
(``create_mcp_server``, imported only once the command line is known to be good).

The scope is the operator's, given on the command line; ``--scope-fields`` pins its keys
so a server cannot be started for a wider (or different) scope than the app uses. A
client that hangs up (closes stdin, breaks the pipe, or sends SIGTERM) ends the server
with exit status 0 and nothing on stderr: hanging up is how every client ends a session,
and the client may share the user's terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from recallstore._command.asgi import http_token
from recallstore._command.database import open_store, parse_scope, store_file
from recallstore._command.errors import EXIT_USAGE, CliError
from recallstore._command.main import CommandParser, db_option, embedder_option
from recallstore.store import MemoryStore
from recallstore.toolbox import MemoryToolbox

_PROG = "recallstore mcp"

# What a hang-up looks like from inside the stdio transport: the pipe breaks while the
# server answers, or the stream it writes to is already closed.
_HANGUP_ERRORS: tuple[type[BaseException], ...] = (
    BrokenPipeError,
    ConnectionResetError,
)


MCP_HELP = "serve one scope's memory to an MCP client (stdio or streamable HTTP)"
"""The one-line help of ``recallstore mcp`` in ``recallstore --help``."""

MCP_DESCRIPTION = (
    "Serve one scope's memory to an MCP client: the four memory tools, the Manual "
    "and the recall block (as prompts and resources). stdio by default."
)
"""The description ``recallstore mcp --help`` starts with."""

ServerFactory = Callable[..., Any]
"""``create_mcp_server``: builds the MCP server for a store and a scope."""


def add_mcp_arguments(
    mcp: argparse.ArgumentParser, load_server: Callable[[], ServerFactory]
) -> None:
    """Add the options of ``recallstore mcp`` to ``mcp`` and make it run the server.

    ``load_server`` returns ``create_mcp_server``; it is called once the options are
    checked (importing the MCP SDK is what fails when the extra is missing).
    """
    mcp.add_argument(
        "--scope",
        action="append",
        metavar="KEY=VALUE",
        help="a pair of the scope every tool call is bound to; repeat for more (at least one)",
    )
    mcp.add_argument(
        "--scope-fields",
        metavar="KEY,KEY",
        help="the scope keys the app uses (e.g. tenant,user): refuse to start unless --scope "
        "gives exactly these keys",
    )
    mcp.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP on 127.0.0.1 (needs a token) instead of stdio",
    )
    mcp.add_argument("--port", type=int, default=8766, help="HTTP port on 127.0.0.1 (default 8766)")
    mcp.add_argument("--token", help="HTTP access token (default: a fresh random one)")
    mcp.add_argument("--conversation-id", help="stamped into the provenance of saves")
    mcp.add_argument("--run-id", help="stamped into the provenance of saves")
    mcp.add_argument("--author", help="stamped into the provenance of saves")
    mcp.add_argument("--name", default="recallstore", help="the server name (default: %(default)s)")
    mcp.set_defaults(handler=partial(run_mcp, load_server=load_server))


def mcp_parser(load_server: Callable[[], ServerFactory]) -> argparse.ArgumentParser:
    """The parser of ``python -m recallstore.adapters.mcp``: ``recallstore mcp``'s own."""
    mcp = CommandParser(
        prog=_PROG, parents=[db_option(), embedder_option()], description=MCP_DESCRIPTION
    )
    add_mcp_arguments(mcp, load_server)
    return mcp


def _bound_scope(pairs: list[str] | None, fields: str | None) -> dict[str, str]:
    """The server's scope from ``--scope`` pairs, checked against ``--scope-fields``."""
    if not pairs:
        raise CliError(
            "at least one --scope KEY=VALUE is required (e.g. --scope user=u_42); "
            "an unscoped memory server would expose every user's memories",
            EXIT_USAGE,
            prog=_PROG,
        )
    scope = parse_scope(pairs)
    empty = [key for key, value in scope.items() if not value]
    if empty:
        raise CliError(f"--scope {empty[0]!r} needs a non-empty value", EXIT_USAGE, prog=_PROG)
    if fields is not None:
        pinned = [field.strip() for field in fields.split(",")]
        if not all(pinned):
            raise CliError(
                f"--scope-fields must be comma-separated keys, got {fields!r}",
                EXIT_USAGE,
                prog=_PROG,
            )
        if set(pinned) != set(scope):
            raise CliError(
                f"--scope-fields pins the scope keys to {', '.join(sorted(set(pinned)))} but "
                f"--scope gives {', '.join(sorted(scope))}; refusing to serve another scope "
                "than the app's",
                EXIT_USAGE,
                prog=_PROG,
            )
    return scope


def run_mcp(args: argparse.Namespace, load_server: Callable[[], ServerFactory]) -> int:
    """``recallstore mcp``: serve until the client hangs up (stdio) or Ctrl+C (HTTP)."""
    scope = _bound_scope(args.scope, args.scope_fields)
    if args.http:
        token = http_token(args.port, args.token, prog=_PROG)
    elif args.token is not None:
        raise CliError("--token applies only with --http", EXIT_USAGE, prog=_PROG)
    store = open_store(args.db, must_exist=False, embedder=args.embedder)
    path = store_file(store)
    if path is not None and not path.parent.is_dir():
        raise CliError(f"--db {str(path)!r}: directory does not exist", prog=_PROG)
    # Build once before serving so a bad --conversation-id fails here, not mid-session.
    MemoryToolbox(
        store, scope, conversation_id=args.conversation_id, run_id=args.run_id, author=args.author
    )
    create_mcp_server = load_server()

    def build(opened: MemoryStore) -> Any:
        return create_mcp_server(
            opened,
            scope,
            conversation_id=args.conversation_id,
            run_id=args.run_id,
            author=args.author,
            name=args.name,
        )

    if args.http:
        from recallstore.adapters._mcp_http import serve_http

        return serve_http(store, build, port=args.port, token=token)
    return _serve_stdio(store, build)


# One JSON-RPC message per line; a save may carry 16,000 characters of content, and a
# line longer than this limit would end the session.
_MAX_LINE_BYTES = 1 << 24


class _PipeLines:
    """stdin as asyncio reads it: lines an ``async for`` can wait on and be cancelled in.

    The SDK reads stdin in a worker thread, which no cancellation can interrupt: after a
    SIGTERM the server would wait for a line that never comes.
    """

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _PipeLines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


async def _stdin_lines() -> _PipeLines | None:
    """stdin as :class:`_PipeLines`, or None when it is a regular file (no async pipe)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_MAX_LINE_BYTES)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except (ValueError, OSError):
        return None
    return _PipeLines(reader)


def _serve_stdio(store: MemoryStore, build: Callable[[MemoryStore], Any]) -> int:
    import anyio
    from mcp.server.stdio import stdio_server

    async def stop_on_sigterm(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                scope.cancel()
                return

    async def serve() -> None:
        async with store, anyio.create_task_group() as tasks:
            tasks.start_soon(stop_on_sigterm, tasks.cancel_scope)
            server = build(store)
            stdin = await _stdin_lines()
            async with stdio_server(stdin=cast(Any, stdin)) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            tasks.cancel_scope.cancel()

    # End of input, a broken pipe and SIGTERM are all a normal close: exit 0, silently.
    try:
        anyio.run(serve)
    except BaseExceptionGroup as group:
        _, rest = group.split(_HANGUP_ERRORS)
        if rest is not None:
            raise
        _quiet_stdout()
    except _HANGUP_ERRORS:
        _quiet_stdout()
    return 0


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: flushing the broken pipe at exit would print a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)
