"""The SSE stream of memory events: a small Starlette app (extra ``server``).

One SSE message per event: ``event:`` is the type, ``id:`` the event id, ``data:`` the
envelope as one line of JSON. Keep-alive comments are sent every ``ping_seconds``.

* Auth: ``Authorization: Bearer <token>`` or the cookie ``recallstore_token`` (browsers'
  EventSource cannot send headers); anything else gets 401. Serving without a token
  must be asked for with ``allow_unauthenticated=True``.
* Resume: ``Last-Event-ID`` (or ``?last_event_id=``) replays the bus's retained events
  after that id; when some are gone, an ``event: gap`` message says so first.
* Filter: ``?scope=key=value`` (repeatable) keeps events whose scope holds every pair.
* A client that reads too slowly loses its oldest queued events (announced by a
  ``gap`` message); one whose socket stays blocked past ``send_timeout`` is dropped.
  Neither ever blocks the publisher or the other clients.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from recallstore.errors import ConfigurationError, MissingDependencyError
from recallstore.events.bus import EventBus, Subscription
from recallstore.events.models import GAP_EVENT_TYPE, MemoryEvent, StreamGap
from recallstore.records import parse_scope_pairs
from recallstore.tokens import TOKEN_COOKIE, any_token_matches, bearer_token, token_problem

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = [
    "DEFAULT_PING_SECONDS",
    "DEFAULT_SEND_TIMEOUT",
    "DEFAULT_STREAM_QUEUE",
    "TOKEN_COOKIE",
    "create_sse_app",
]

DEFAULT_PING_SECONDS: Final = 15.0
DEFAULT_SEND_TIMEOUT: Final = 30.0
"""Seconds one write to a client may block before that client is dropped."""
DEFAULT_STREAM_QUEUE: Final = 256
"""Events queued per client before its oldest are dropped."""
DEFAULT_RETRY_MS: Final = 3_000

EventHistory = Callable[[int, int], Awaitable[tuple[StreamGap | None, list[MemoryEvent]]]]
"""``history(after_id, before_id)``: older events than the bus retains, and the gap
that remains (``JournalFeed.history``)."""

_logger = logging.getLogger("recallstore.events.sse")
_EVENT_ID = re.compile(r"-?[0-9]{1,19}")


def _parse_last_event_id(value: str | None) -> int | None:
    if value is None or not value.strip():
        return None
    text = value.strip()
    # int() alone would also take "1_000", "+5" and non-ASCII digits; ids are plain decimals.
    if not _EVENT_ID.fullmatch(text):
        raise ValueError(f"Last-Event-ID must be an event id (an integer), got {value[:40]!r}")
    parsed = int(text)
    if parsed < 0:
        raise ValueError(f"Last-Event-ID must be >= 0, got {parsed}")
    return parsed


def create_sse_app(
    bus: EventBus,
    *,
    token: str | None,
    allow_unauthenticated: bool = False,
    ping_seconds: float = DEFAULT_PING_SECONDS,
    max_queue: int = DEFAULT_STREAM_QUEUE,
    send_timeout: float | None = DEFAULT_SEND_TIMEOUT,
    retry_ms: int = DEFAULT_RETRY_MS,
    history: EventHistory | None = None,
) -> Starlette:
    """A Starlette app streaming ``bus`` at its root path ``/`` (mount it anywhere).

    ``token`` is required unless ``allow_unauthenticated=True`` is passed explicitly.
    ``history`` (``JournalFeed.history``) serves a ``Last-Event-ID`` older than the
    bus's replay buffer from the store's journal; the ``gap`` then covers only what
    the journal no longer holds.
    """
    try:
        from sse_starlette import EventSourceResponse, ServerSentEvent
        from sse_starlette.sse import SendTimeoutError
        from starlette.applications import Starlette
        from starlette.background import BackgroundTask
        from starlette.responses import PlainTextResponse
        from starlette.routing import Route
    except ImportError:
        raise MissingDependencyError("the SSE event stream", "server") from None

    if token is None and not allow_unauthenticated:
        raise ConfigurationError(
            "create_sse_app needs a token; pass allow_unauthenticated=True to serve "
            "the event stream to anyone who can reach it"
        )
    if token is not None and not token.strip():
        raise ConfigurationError("create_sse_app: token must not be blank")
    if token is not None and (problem := token_problem(token)) is not None:
        raise ConfigurationError(f"create_sse_app: token {problem}")
    if max_queue < 1:
        raise ConfigurationError(f"create_sse_app: max_queue must be >= 1, got {max_queue}")

    class _StreamResponse(EventSourceResponse):
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            try:
                await super().__call__(scope, receive, send)
            except SendTimeoutError:
                # A routine event, not an application error: the client stopped reading.
                _logger.info("dropped an event-stream client blocked for %ss", send_timeout)

    def authorized(request: Request) -> bool:
        if token is None:
            return True
        presented = (
            bearer_token(request.headers.getlist("authorization")),
            request.cookies.get(TOKEN_COOKIE),
        )
        return any_token_matches(presented, token)

    async def messages(subscription: Subscription) -> AsyncIterator[Any]:
        try:
            # The first bytes go out at once, so a client knows it is subscribed.
            yield ServerSentEvent(comment="recallstore events", retry=retry_ms)
            async for item in subscription:
                if isinstance(item, StreamGap):
                    yield ServerSentEvent(data=item.model_dump_json(), event=GAP_EVENT_TYPE)
                else:
                    yield ServerSentEvent(
                        data=item.model_dump_json(), event=item.type, id=str(item.id)
                    )
        finally:
            subscription.close()

    async def stream(request: Request) -> Response:
        if not authorized(request):
            return PlainTextResponse(
                "missing or invalid token",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="recallstore"'},
            )
        try:
            scope = parse_scope_pairs(request.query_params.getlist("scope"))
            last_event_id = _parse_last_event_id(
                request.headers.get("last-event-id") or request.query_params.get("last_event_id")
            )
        except ValueError as exc:
            return PlainTextResponse(str(exc), status_code=400)
        # Subscribed before the response starts: nothing published after the client
        # sees the headers can be missed.
        subscription = bus.subscribe(scope=scope, last_event_id=last_event_id, max_queue=max_queue)
        gap = subscription.pending_gap
        if history is not None and gap is not None and gap.reason == "expired":
            # The first id the bus still held when subscribing; later ones are queued.
            before = (last_event_id or 0) + gap.missed + 1
            older_gap, older = await history(last_event_id or 0, before)
            subscription.backfill(older, older_gap)
        return _StreamResponse(
            messages(subscription),
            ping=ping_seconds,
            send_timeout=send_timeout,
            # HEAD never iterates the body; this still releases the subscription.
            background=BackgroundTask(subscription.close),
        )

    return Starlette(routes=[Route("/", stream, methods=["GET"])])
