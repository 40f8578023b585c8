"""``recallstore mcp --http``: streamable HTTP on 127.0.0.1, behind a bearer token.

The token rule is ``recallstore serve``'s (docs/security.md): a fresh random token per
run unless ``--token`` is given, compared in constant time, loopback only. MCP clients
send it as ``Authorization: Bearer <token>``; there is no cookie login, since no
browser page is served. The SDK's DNS-rebinding protection (Host and Origin checks for
loopback) stays on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recallstore._command.asgi import HOST, loopback_listener, run_until_stopped, serve_asgi
from recallstore.store import MemoryStore
from recallstore.tokens import bearer_token, token_matches

MCP_PATH = "/mcp"
"""Where the streamable HTTP endpoint is mounted."""

_UNAUTHORIZED = b'{"error": "unauthorized", "message": "a valid bearer token is required"}'


class _BearerGate:
    """Lets a request through only with ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._token = token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="recallstore"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": _UNAUTHORIZED})
            return
        await self._app(scope, receive, send)

    def _authorized(self, scope: Any) -> bool:
        sent = [
            value for name, value in scope.get("headers") or [] if name.lower() == b"authorization"
        ]
        return token_matches(bearer_token(sent), self._token)


def serve_http(
    store: MemoryStore, build: Callable[[MemoryStore], Any], *, port: int, token: str
) -> int:
    """Serve ``build(store)`` over streamable HTTP until Ctrl+C; prints the address first."""
    listener = loopback_listener(port)

    def announce(bound_port: int) -> None:
        print(f"MCP endpoint: http://{HOST}:{bound_port}{MCP_PATH}", flush=True)
        print(f"Authorization: Bearer {token}", flush=True)
        print("Press Ctrl+C to stop.", flush=True)

    async def serve() -> None:
        async with store:
            server = build(store)
            app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=HOST)
            await serve_asgi(_BearerGate(app, token), listener, announce)

    return run_until_stopped(serve, listener)
