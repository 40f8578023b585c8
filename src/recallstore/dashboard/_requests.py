"""Reading what a lens request asks for: query strings, forms, reasons.

Shared by the HTML pages and the JSON API; knows nothing of either's responses.
Every bad value raises :class:`~recallstore.errors.MemoryValidationError` naming the
parameter, which each surface turns into its own kind of answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from urllib.parse import parse_qsl

from starlette.requests import Request

from recallstore._when import (
    TimeWindow,
    UnknownTimePhrase,
    last_instant,
    resolve_since_until,
)
from recallstore.errors import MemoryValidationError
from recallstore.records import MAX_LIMIT, MemorySearchQuery, check_invalid_reason
from recallstore.scope_text import parse_scope_text
from recallstore.store import Clock, utc_now

__all__ = [
    "DASHBOARD_RUN_ID",
    "as_of_param",
    "check_reason",
    "int_param",
    "observed_window",
    "read_form",
    "search_from_params",
]

DASHBOARD_RUN_ID = "dashboard"
"""The run id the lens's own store calls carry, so they are told apart in the feed."""

_MAX_FORM_BYTES = 64_000


def int_param(params: Mapping[str, str], name: str, default: int, maximum: int) -> int:
    """Query parameter ``name`` as a whole number in ``0..maximum``; ``default`` when blank."""
    text = params.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise MemoryValidationError(name, f"must be a whole number, got {text!r}", text) from None
    if not 0 <= value <= maximum:
        raise MemoryValidationError(name, f"must be between 0 and {maximum}, got {value}", value)
    return value


def search_from_params(
    request: Request, *, default_limit: int, clock: Clock = utc_now
) -> MemorySearchQuery:
    """The search a records page or API call asks for through its query string.

    ``scope`` (repeatable, ``key=value``), ``q``, ``kind`` (repeatable), ``tag``
    (repeatable), ``invalidated=1``, ``expired=1``, ``limit``, the observed window
    ``since`` / ``until`` (ISO dates or phrases such as "last week", read in UTC at
    ``clock``, the store's) and ``as_of`` (:func:`as_of_param`). Bad values raise
    :class:`MemoryValidationError` naming the parameter.
    """
    params = request.query_params
    kinds = params.getlist("kind")
    tags = params.getlist("tag")
    window = observed_window(params.get("since"), params.get("until"), clock)
    return MemorySearchQuery(
        query=params.get("q") or None,
        scope=parse_scope_text(params.getlist("scope")),
        kinds=tuple(kinds) if kinds else None,  # each checked against MemoryKind by the model
        tags=tuple(tags) if tags else None,
        limit=int_param(params, "limit", default_limit, MAX_LIMIT),
        include_invalidated=params.get("invalidated") == "1",
        include_expired=params.get("expired") == "1",
        observed_after=window.start,
        observed_before=window.end,
        as_of=as_of_param(params.get("as_of"), clock),
    )


def as_of_param(text: str | None, clock: Clock = utc_now) -> datetime | None:
    """The instant an ``as_of`` parameter names, for time travel: the end of the period a
    phrase or ISO date names ("2026-11-01" is the end of that day, UTC; "last week" the
    end of last week), an ISO time exactly, never later than now (``clock``); None when
    blank. :class:`MemoryValidationError` on ``as_of`` for text it cannot read."""
    if text is None or not text.strip():
        return None
    now = clock()
    try:
        end = last_instant(text, now)
    except UnknownTimePhrase as exc:
        raise MemoryValidationError("as_of", str(exc), text) from None
    return now if end is None or end > now else end


def observed_window(since: str | None, until: str | None, clock: Clock = utc_now) -> TimeWindow:
    """The window the ``since`` / ``until`` parameters name (UTC, read at ``clock``);
    :class:`MemoryValidationError` naming the parameter a phrase cannot be read from,
    or one that names no time the calendar holds ("0001-01-01")."""
    now = clock()
    for name, phrase in (("since", since), ("until", until)):
        try:
            if name == "since":
                resolve_since_until(phrase, None, now)
            else:
                resolve_since_until(None, phrase, now)
        except UnknownTimePhrase as exc:
            raise MemoryValidationError(name, str(exc), phrase) from None
    try:
        return resolve_since_until(since, until, now)
    except ValueError as exc:
        raise MemoryValidationError("until", str(exc), until) from None


async def read_form(request: Request) -> dict[str, str]:
    """A small urlencoded form body (python-multipart is not needed for that)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_FORM_BYTES:
            raise MemoryValidationError("body", f"the form is over {_MAX_FORM_BYTES} bytes")
    if not body:
        return {}
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise MemoryValidationError("body", "expected an HTML form", content_type)
    try:
        return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        raise MemoryValidationError("body", "the form is not UTF-8") from None


def check_reason(reason: object) -> str | None:
    """An invalidation reason from a form or JSON body, stripped; None when blank or absent.

    Raises :class:`MemoryValidationError` on field ``reason`` for a non-string or for
    what :func:`recallstore.records.check_invalid_reason` refuses.
    """
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise MemoryValidationError("reason", "must be a string or null", reason)
    return check_invalid_reason(reason.strip() or None)
