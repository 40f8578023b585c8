"""Access tokens of recallstore's local HTTP surfaces, each rule in one place.

The event stream, the dashboard and ``recallstore mcp --http`` all take a token as
``Authorization: Bearer <token>`` (and the first two as the cookie the lens sets). How
a bearer token is read — one ``Authorization`` header, the ``Bearer`` scheme, a token
that is not blank — how it is compared — in constant time, every candidate — and which
tokens can be configured at all (:data:`TOKEN_RULE`) are decided here. Pure functions:
no I/O, no web framework.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable, Sequence
from typing import Final

__all__ = [
    "TOKEN_COOKIE",
    "TOKEN_RULE",
    "any_token_matches",
    "bearer_token",
    "token_matches",
    "token_problem",
]

TOKEN_COOKIE: Final = "recallstore_token"
"""The cookie the lens sets after a token login, and the event stream reads."""

TOKEN_RULE: Final = "letters A-Z a-z, digits and - . _ ~ only"
"""Which characters a configured token may hold: those an address (``?token=``), an
``Authorization`` header and a cookie all carry unchanged. Any other (a space, a
newline, ``+``, a non-ASCII letter) is altered or refused on one of those ways, so
such a token could never log in."""

_TOKEN_CHARACTER: Final = re.compile(r"[A-Za-z0-9._~-]")


def token_problem(token: str) -> str | None:
    """Why ``token`` can never authenticate every way a client presents it, or None.

    ``"has ' ' at position 32; a token holds letters A-Z a-z, digits and - . _ ~ only"``.
    """
    if not token:
        return "is empty"
    for position, character in enumerate(token):
        if not _TOKEN_CHARACTER.fullmatch(character):
            return f"has {character!r} at position {position}; a token holds {TOKEN_RULE}"
    return None


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
    # A presented value that is no text at all (a lone surrogate) matches nothing.
    presented = candidate.encode("utf-8", "surrogatepass")
    return hmac.compare_digest(presented, token.encode("utf-8"))


def any_token_matches(candidates: Iterable[str | None], token: str) -> bool:
    """Whether any candidate matches, comparing every one, so the time taken does not
    tell which one did."""
    return any([token_matches(candidate, token) for candidate in candidates])
