"""Access tokens of recallstore's local HTTP surfaces, each rule in one place.

The event stream, the dashboard and ``recallstore mcp --http`` all take a token as
``Authorization: Bearer <token>`` (and the first two as the cookie the lens sets). How
a bearer token is read — one ``Authorization`` header, the ``Bearer`` scheme, a token
that is not blank — and how it is compared — in constant time, every candidate — are
decided here. Pure functions: no I/O, no web framework.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Sequence
from typing import Final

__all__ = ["TOKEN_COOKIE", "any_token_matches", "bearer_token", "token_matches"]

TOKEN_COOKIE: Final = "recallstore_token"
"""The cookie the lens sets after a token login, and the event stream reads."""


def bearer_token(authorization: Sequence[str | bytes]) -> str | None:
    """The token of a request's ``Authorization`` headers (every value it sent), or None.

    None unless there is exactly one header, its scheme is ``Bearer`` (any case) and the
    token is not blank: with two headers, which one a server read depended on its parser,
    so neither counts.
    """
    if len(authorization) != 1:
        return None
    value = authorization[0]
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    scheme, _, credentials = text.partition(" ")
    token = credentials.strip()
    return token if scheme.lower() == "bearer" and token else None


def token_matches(candidate: str | None, token: str) -> bool:
    """Constant-time comparison of a presented token with the configured one."""
    if not candidate:
        return False
    return hmac.compare_digest(candidate.encode("utf-8"), token.encode("utf-8"))


def any_token_matches(candidates: Iterable[str | None], token: str) -> bool:
    """Whether any candidate matches, comparing every one, so the time taken does not
    tell which one did."""
    return any([token_matches(candidate, token) for candidate in candidates])
