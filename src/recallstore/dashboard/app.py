"""``create_dashboard_app``: the memory lens as one Starlette application.

Routes (all behind the token, except ``/static`` and ``/favicon.ico``):

* ``/``: the live feed of memory events (SSE from ``/events``);
* ``/records``: records by scope, with search, kinds, "show invalidated";
* ``/records/{id}``: one record, its provenance and its supersede chain;
* ``/recall``: the exact turn-1 recall block for a scope and a first message;
* ``/person``: everything memory holds for one scope, as of now or another time, with
  its JSONL export and "forget this person" (``/person/export``, ``/person/forget``);
* ``/plans``, ``/plans/{id}``, ``/api/plans``: the applied consolidation plans with
  their diffs; a plan's page reverts it (``POST /plans/{id}/revert``);
* ``/learning``: candidates and their evidence, approve / reject / demote through the
  host's gate, the evolution ledger, the learned section of the system prompt;
* ``/api/records`` …: a small JSON API (write, read, search, invalidate);
* ``/api/events``, ``/api/snippets``: the feed in time order, and what its records say;
* ``/events``: the SSE stream (``recallstore.events.sse``); on a journal-fed bus also
  ``/lens-events``, the lens's own searches and recall previews (never journaled).

Starlette is imported when the app is built, not when this module is, so the core
library works without the ``server`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallstore.backends.registry import describe_store
from recallstore.errors import ConfigurationError, MissingDependencyError
from recallstore.store import MemoryStore, PromotionGate
from recallstore.tokens import token_problem

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from recallstore.events import EventBus
    from recallstore.events.sse import EventHistory

__all__ = ["DEFAULT_REPLAY", "create_dashboard_app"]

DEFAULT_REPLAY = 100
"""Recent events the feed shows when the page opens (from the bus's replay buffer)."""


def create_dashboard_app(
    store: MemoryStore,
    bus: EventBus,
    *,
    token: str,
    replay: int = DEFAULT_REPLAY,
    max_feed_items: int = 200,
    history: EventHistory | None = None,
    gate: PromotionGate | None = None,
) -> Starlette:
    """The memory lens over ``store``, streaming ``bus``'s events, guarded by ``token``.

    ``store`` is normally an :class:`~recallstore.events.ObservedMemoryStore` publishing
    to ``bus``; any other store is wrapped in one, so what the lens writes shows up in
    its own feed. Open the page once as ``/?token=<token>``: that sets an HttpOnly,
    SameSite=Strict cookie and redirects to ``/``. ``replay`` is how many recent events
    (at most) the feed shows on opening; ``max_feed_items`` how many it keeps on screen.
    ``history`` (``JournalFeed.history``) lets the stream resume from a ``Last-Event-ID``
    older than the bus's replay buffer, out of the store's journal. ``gate`` is the
    host's promotion policy the learning page's approvals go through (default:
    ``PromotionGate()``, which asks for a person's approval for every target).

    Raises :class:`~recallstore.errors.MissingDependencyError` without the ``server``
    extra, and :class:`~recallstore.errors.ConfigurationError` for a token that could never
    log in (blank, or a character outside :data:`~recallstore.tokens.TOKEN_RULE`) or an
    observed store that publishes to another bus.
    """
    if not isinstance(token, str) or not token.strip():
        raise ConfigurationError("the dashboard needs a non-empty token")
    if (problem := token_problem(token)) is not None:
        raise ConfigurationError(f"the dashboard's token {problem}")
    if replay < 0 or max_feed_items < 1:
        raise ConfigurationError(
            f"replay must be >= 0 and max_feed_items >= 1, got {replay} and {max_feed_items}"
        )
    try:
        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.middleware import Middleware
        from starlette.requests import Request
        from starlette.responses import (
            JSONResponse,
            PlainTextResponse,
            RedirectResponse,
            Response,
        )
        from starlette.routing import Mount, Route
        from starlette.staticfiles import StaticFiles

        from recallstore.dashboard._api import RecordsApi
        from recallstore.dashboard._auth import TokenGate
        from recallstore.dashboard._feed import FeedApi
        from recallstore.dashboard._learning import LearningView
        from recallstore.dashboard._pages import DashboardPages
        from recallstore.dashboard._person import PersonView
        from recallstore.dashboard._plans import PlansView
        from recallstore.events import EVENT_TYPES, EventBus, ObservedMemoryStore
        from recallstore.events.sse import create_sse_app
    except ImportError as exc:
        if isinstance(exc, MissingDependencyError):
            raise
        raise MissingDependencyError("the dashboard", "server") from exc

    if isinstance(store, ObservedMemoryStore) and store.bus is not bus:
        raise ConfigurationError(
            "the store publishes to a different EventBus than the one given: "
            "the live feed would never show its events"
        )
    observed = store if isinstance(store, ObservedMemoryStore) else ObservedMemoryStore(store, bus)
    # The lens's own searches and recall previews are shown in its feed, marked as the
    # lens's, and never journaled. A journal-fed bus carries only what the journal holds,
    # so on one they go to a bus of the lens's own, streamed at /lens-events.
    lens_bus: EventBus | None = None
    reader = observed
    if bus.numbered_by == "journal":
        lens_bus = EventBus(replay_size=bus.replay_size)
        reader = ObservedMemoryStore(
            observed.inner,
            lens_bus,
            include_content=observed.include_content,
            include_query_text=observed.include_query_text,
        )
    pages = DashboardPages(
        observed,
        reader=reader,
        lens_bus=lens_bus,
        unobserved_store=observed.inner,
        event_types=EVENT_TYPES,
        store_label=_store_label(store),
        bus=bus,
        replay=replay,
        max_feed_items=max_feed_items,
    )
    api = RecordsApi(observed)
    feed_api = FeedApi(bus, observed.inner)

    async def favicon(request: Request) -> Response:
        root = request.scope.get("root_path", "")
        return RedirectResponse(f"{root}/static/favicon.svg", status_code=308)

    plans = PlansView(pages, observed.inner)
    person = PersonView(pages, observed, [bus] if lens_bus is None else [bus, lens_bus])
    learning = LearningView(pages, observed.inner, gate or PromotionGate())

    async def http_error(request: Request, exc: Exception) -> Response:
        status_code = exc.status_code if isinstance(exc, HTTPException) else 500
        # Inside a Mount, root_path includes the mount's prefix; app_root_path does not.
        root = request.scope.get("app_root_path", request.scope.get("root_path", ""))
        if request.url.path.startswith(root + "/static/"):
            # Served without the token: the answer must not show the store's location.
            return PlainTextResponse(str(exc), status_code=status_code)
        if request.url.path.startswith(root + "/api/"):
            return JSONResponse(
                {"error": "not_found" if status_code == 404 else "http_error"},
                status_code=status_code,
            )
        if status_code == 404:
            return pages.not_found(request)
        return pages.error_page(request, status_code, "Request refused", str(exc))

    routes = [
        Route("/", pages.feed, name="feed"),
        Route("/records", pages.records, name="records"),
        Route("/records/{record_id:str}", pages.record, name="record"),
        Route("/records/{record_id:str}/invalidate", pages.invalidate_form, methods=["POST"]),
        Route("/records/{record_id:str}/delete", pages.delete_form, methods=["POST"]),
        Route("/recall", pages.recall, name="recall"),
        Route("/api/events", feed_api.events, methods=["GET"]),
        Route("/api/snippets", feed_api.snippets, methods=["GET"]),
        Route("/favicon.ico", favicon),
        Route("/plans", plans.page, name="plans"),
        Route("/plans/{plan_id:str}", plans.plan_page, name="plan"),
        Route("/plans/{plan_id:str}/revert", plans.revert, methods=["POST"]),
        Route("/person", person.page, name="person"),
        Route("/person/export", person.export, methods=["GET"]),
        Route("/person/forget", person.forget_page, methods=["GET"]),
        Route("/person/forget", person.forget, methods=["POST"]),
        Route("/person/forgotten", person.forgotten, methods=["GET"]),
        Route("/api/plans", plans.api, methods=["GET"]),
        Route("/learning", learning.page, name="learning"),
        Route("/learning/conversation", learning.conversation, name="learning_conversation"),
        Route("/learning/promote", learning.promote_form, methods=["POST"]),
        Route("/learning/demote", learning.demote_form, methods=["POST"]),
        Route("/learning/reject", learning.reject_form, methods=["POST"]),
        Route("/api/records", api.create, methods=["POST"]),
        Route("/api/records", api.search, methods=["GET"]),
        Route("/api/records/{record_id:str}", api.read, methods=["GET"]),
        Route("/api/records/{record_id:str}", api.delete, methods=["DELETE"]),
        Route("/api/records/{record_id:str}/invalidate", api.invalidate, methods=["POST"]),
        Mount("/events", app=create_sse_app(bus, token=token, history=history), name="events"),
        *(
            []
            if lens_bus is None
            else [Mount("/lens-events", app=create_sse_app(lens_bus, token=token))]
        ),
        Mount(
            "/static",
            app=StaticFiles(packages=[("recallstore.dashboard", "static")]),
            name="static",
        ),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(TokenGate, token=token, unauthorized=pages.unauthorized)],
        exception_handlers={HTTPException: http_error},
    )


def _store_label(store: MemoryStore) -> str:
    """A short description of the store for the page header: its type and file."""
    return str(describe_store(store))
