"""The lens's token gate: an ASGI middleware in front of every page, API route and stream.

The page is opened once as ``/?token=<token>``; the gate answers with a cookie
(HttpOnly, SameSite=Strict) and a redirect that drops the token from the address, so
the browser's EventSource (which cannot send headers) is authenticated by the cookie.
Scripts and API clients may send ``Authorization: Bearer <token>`` instead.

Cookies are not kept apart by port, and every ``127.0.0.1`` port is the same *site*,
so SameSite=Strict does not stop a page served by another local program from making
the browser send the cookie. A request that changes something and is authenticated by
the cookie must therefore come from the lens's own origin (``Origin`` and
``Sec-Fetch-Site`` checked); a bearer token cannot be attached by another page.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from recallstore.tokens import TOKEN_COOKIE, bearer_token, token_matches

__all__ = ["TOKEN_COOKIE", "TokenGate", "token_matches"]


_PUBLIC_PREFIXES = ("/static/", "/favicon.ico")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _is_cross_origin(connection: HTTPConnection) -> bool:
    """True when the browser says the request was started by a page of another origin."""
    if connection.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return True
    origin = connection.headers.get("origin")
    return origin is not None and urlsplit(origin).netloc != connection.headers.get("host")


class TokenGate:
    """Lets a request through only with the right token; everything under /static is public.

    ``unauthorized`` builds the HTML answer for browsers; API and stream paths get a
    short JSON or text 401 instead.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        unauthorized: Callable[[HTTPConnection], Response],
    ) -> None:
        self.app = app
        self._token = token
        self._unauthorized = unauthorized

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        path = _relative_path(scope)
        if path.startswith(_PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
            return
        response: Response | None = None
        offered = connection.query_params.get("token")
        bearer = bearer_token(connection.headers.getlist("authorization"))
        if offered is not None and scope.get("method") == "GET":
            response = self._login(connection, offered)
        elif bearer is not None:
            if not token_matches(bearer, self._token):
                response = self._refuse(connection, path)
        elif not token_matches(connection.cookies.get(TOKEN_COOKIE), self._token):
            response = self._refuse(connection, path)
        elif scope.get("method", "GET") not in _SAFE_METHODS and _is_cross_origin(connection):
            response = self._refuse_cross_origin(path)
        if response is None:
            await self.app(scope, receive, send)
        else:
            await response(scope, receive, send)

    def _login(self, connection: HTTPConnection, offered: str) -> Response:
        if not token_matches(offered, self._token):
            return self._refuse(connection, _relative_path(connection.scope))
        remaining = [(k, v) for k, v in connection.query_params.multi_items() if k != "token"]
        location = connection.scope.get("root_path", "") + _relative_path(connection.scope)
        if remaining:
            location += "?" + urlencode(remaining)
        response = RedirectResponse(location, status_code=303)
        response.set_cookie(
            TOKEN_COOKIE,
            self._token,
            httponly=True,
            samesite="strict",
            path="/",
        )
        response.headers["Cache-Control"] = "no-store"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @staticmethod
    def _refuse_cross_origin(path: str) -> Response:
        message = "requests from another origin may not change memory"
        if path.startswith("/api/"):
            return JSONResponse({"error": "cross_origin", "message": message}, status_code=403)
        return PlainTextResponse(message, status_code=403)

    def _refuse(self, connection: HTTPConnection, path: str) -> Response:
        response: Response
        if path.startswith("/api/"):
            response = JSONResponse(
                {"error": "unauthorized", "message": "a valid token is required"},
                status_code=401,
            )
        elif path == "/events" or path.startswith("/events/"):
            response = PlainTextResponse("a valid token is required", status_code=401)
        else:
            response = self._unauthorized(connection)
        response.headers["WWW-Authenticate"] = 'Bearer realm="recallstore"'
        return response


def _relative_path(scope: Scope) -> str:
    path: str = scope.get("path", "/")
    root_path: str = scope.get("root_path", "")
    if root_path and path.startswith(root_path):
        path = path[len(root_path) :] or "/"
    return path
