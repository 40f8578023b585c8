"""The checks in front of every recallstore HTTP server (``serve``, ``mcp --http``).

Both listen on 127.0.0.1 only, but a browser page of any site can still reach them
(DNS rebinding: ``evil.example`` resolving to 127.0.0.1) and any local program can
connect. Before a request reaches the app (the dashboard, or the MCP SDK, whose own
Host and Origin check matches by prefix and so accepted ``localhost:evil.example``):

* ``Host`` must be exactly ``127.0.0.1:<port>`` or ``localhost:<port>`` of the bound
  port, once: anything else is ``421 Misdirected Request`` (the dashboard reflected a
  foreign Host in its ``/events`` redirect);
* an ``Origin``, when sent, must be exactly ``http://`` one of those: else ``403``;
* at most one ``Authorization`` header: with two, which one counted depended on the
  parser (the last won), so the request is ``400``.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["MIN_TOKEN_CHARS", "LoopbackGuard"]

MIN_TOKEN_CHARS: Final = 16
"""The shortest ``--token`` accepted (the generated one has 32 characters)."""


class LoopbackGuard:
    """ASGI middleware: refuses what a loopback server must never serve (see the module)."""

    def __init__(self, app: Any, port: int) -> None:
        self._app = app
        self._hosts = frozenset({f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()})
        self._origins = frozenset(b"http://" + host for host in self._hosts)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        refusal = self._refusal(scope.get("headers") or [])
        if refusal is None:
            await self._app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            status, error, message = refusal
            body = json.dumps({"error": error, "message": message}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})

    def _refusal(self, headers: list[tuple[bytes, bytes]]) -> tuple[int, str, str] | None:
        """(status, error, message) when the request must be refused, else None."""
        named: dict[bytes, list[bytes]] = {}
        for name, value in headers:
            named.setdefault(name.lower(), []).append(value)
        hosts = named.get(b"host", [])
        if len(hosts) != 1 or hosts[0].lower() not in self._hosts:
            return 421, "misdirected", "this server answers only to 127.0.0.1 and localhost"
        origins = named.get(b"origin", [])
        if len(origins) > 1 or (origins and origins[0].lower() not in self._origins):
            return 403, "cross_origin", "requests from another origin are refused"
        if len(named.get(b"authorization", [])) > 1:
            return 400, "bad_request", "send one Authorization header, not several"
        return None
