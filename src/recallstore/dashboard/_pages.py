"""The lens's HTML pages: live feed, records browser, record page, recall preview.

Every page is a jinja2 template rendered with autoescaping on: memory content is
untrusted text and must reach the browser as text, never as markup.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any, Final
from urllib.parse import quote, urlencode

import jinja2
from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from recallstore._unicode import hidden_characters
from recallstore.chain import supersede_chain
from recallstore.context import call_context
from recallstore.dashboard._charts import Chart, kinds_over_time, recall_fullness
from recallstore.dashboard._requests import (
    DASHBOARD_RUN_ID,
    check_reason,
    int_param,
    read_form,
    search_from_params,
)
from recallstore.errors import ConfigurationError, MemoryNotFoundError, MemoryValidationError
from recallstore.events import EventBus
from recallstore.events.catalogue import EVENT_LENS
from recallstore.prompt import render_recall
from recallstore.recall import DEFAULT_BUDGET_CHARS, Recall, assemble_recall
from recallstore.records import (
    MAX_CONTENT_CHARS,
    MAX_LIMIT,
    MAX_REASON_CHARS,
    MEMORY_KINDS,
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
)
from recallstore.scope_text import format_scope, parse_scope_text
from recallstore.store import MemoryStore, scope_matches, store_clock, utc_now

__all__ = ["DashboardPages", "Problem"]

_DEFAULT_PAGE_LIMIT = 50
_MAX_BUDGET_CHARS = 1_000_000
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

_EVENT_LENS: Final = {
    name: {"summary": view.summary, "details": list(view.details)}
    for name, view in EVENT_LENS.items()
}
"""The lens views of event types lens.js does not render itself, for the feed page."""


def _templates() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("recallstore.dashboard", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["ts"] = lambda moment: moment.astimezone(UTC).strftime(
        "%Y-%m-%d %H:%M:%S UTC"
    )
    environment.filters["iso"] = lambda moment: moment.astimezone(UTC).isoformat()
    environment.filters["hidden_characters"] = hidden_characters
    environment.filters["day"] = lambda moment: moment.astimezone(UTC).strftime("%Y-%m-%d")
    environment.filters["scope_query"] = lambda scope: urlencode(
        [("scope", f"{key}={value}") for key, value in scope.items()]
    )
    environment.filters["plan_parts"] = _plan_parts
    return environment


_PLAN_ID = re.compile(r"\bplan_[0-9a-f]{20}\b")


def _plan_parts(text: str) -> list[dict[str, Any]]:
    """``text`` cut into plain parts and consolidation plan ids (to link)."""
    parts: list[dict[str, Any]] = []
    last = 0
    for found in _PLAN_ID.finditer(text):
        parts.append({"plan": False, "text": text[last : found.start()]})
        parts.append({"plan": True, "text": found.group()})
        last = found.end()
    parts.append({"plan": False, "text": text[last:]})
    return [part for part in parts if part["text"]]


@dataclass(frozen=True, slots=True)
class Problem:
    """A bad parameter, as a page names it."""

    field: str
    message: str

    @classmethod
    def of(cls, error: MemoryValidationError) -> Problem:
        """The problem ``error`` names."""
        return cls(error.field, error.message)


class DashboardPages:
    """The pages, bound to one store: the handlers the app routes to.

    ``store`` is the observed store: invalidations and deletes go through it.
    ``reader`` (default: ``store``) takes the searches and recall previews asked for on
    a page; they show in the feed as run ``dashboard``, from ``lens_bus`` when the feed
    is journal-fed (they are never journaled). ``unobserved_store`` is the
    store underneath, for the lens's own bookkeeping reads (a record page and its
    chain walk), which would only be noise in the feed.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        reader: MemoryStore | None = None,
        lens_bus: EventBus | None = None,
        unobserved_store: MemoryStore,
        bus: EventBus,
        event_types: Sequence[str],
        store_label: str,
        replay: int,
        max_feed_items: int = 200,
    ) -> None:
        self.store = store
        self._reader = store if reader is None else reader
        self._lens_bus = lens_bus
        self._unobserved_store = unobserved_store
        self._bus = bus
        self._event_types = list(event_types)
        self._store_label = store_label
        self._replay = replay
        self._max_feed_items = max_feed_items
        self._templates = _templates()

    # -- rendering -------------------------------------------------------------------
    def render(
        self,
        connection: HTTPConnection,
        template: str,
        *,
        status_code: int = 200,
        authenticated: bool = True,
        **context: Any,
    ) -> HTMLResponse:
        """An HTML response from ``template`` with the lens's shared context and headers."""
        now = utc_now()
        html = self._templates.get_template(template).render(
            root=connection.scope.get("root_path", ""),
            # The store's location is nobody's business before they show the token.
            store_label=self._store_label if authenticated else "",
            status_of=lambda record: record.status(now),
            **context,
        )
        return HTMLResponse(html, status_code=status_code, headers=_SECURITY_HEADERS)

    def error_page(
        self,
        connection: HTTPConnection,
        status_code: int,
        heading: str,
        message: str,
        *,
        authenticated: bool = True,
    ) -> HTMLResponse:
        """A plain error page (401, 404, ...)."""
        return self.render(
            connection,
            "error.html",
            status_code=status_code,
            authenticated=authenticated,
            active="",
            code=status_code,
            heading=heading,
            message=message,
        )

    def unauthorized(self, connection: HTTPConnection) -> HTMLResponse:
        """The page shown to a browser without a valid token."""
        return self.error_page(
            connection,
            401,
            "Token required",
            "This memory lens needs its access token.",
            authenticated=False,
        )

    # -- pages -----------------------------------------------------------------------
    async def feed(self, request: Request) -> HTMLResponse:
        """``/``: the live feed of memory events."""
        root = request.scope.get("root_path", "")
        error: Problem | None = None
        scope: dict[str, str] = {}
        try:
            scope = parse_scope_text(request.query_params.getlist("scope"))
        except MemoryValidationError as exc:
            error = Problem.of(exc)
        stream_params = [("scope", f"{key}={value}") for key, value in scope.items()]
        stream_params.append(("last_event_id", str(self._replay_start())))
        events_url = f"{root}/events/?" + urlencode(stream_params)
        lens_events_url = ""
        if self._lens_bus is not None:
            lens_params = stream_params[:-1]
            start = max(self._lens_bus.last_id - self._replay, 0)
            lens_params.append(("last_event_id", str(start)))
            lens_events_url = f"{root}/lens-events/?" + urlencode(lens_params)
        return self.render(
            request,
            "feed.html",
            status_code=422 if error else 200,
            active="feed",
            error=error,
            scope_text=format_scope(scope),
            events_url=events_url,
            lens_events_url=lens_events_url,
            event_types=self._event_types,
            event_lens=_EVENT_LENS,
            max_items=self._max_feed_items,
        )

    def _replay_start(self) -> int:
        """The event id the feed resumes after: ``replay`` events back, within the buffer.

        Starting from an id (rather than "now") also means nothing published between
        rendering the page and the browser connecting is missed.
        """
        last_id = self._bus.last_id
        oldest = self._bus.stats().replay_oldest_id
        retained_from = last_id if oldest is None else oldest - 1
        return max(last_id - self._replay, retained_from, 0)

    async def records(self, request: Request) -> HTMLResponse:
        """``/records``: records by scope, with search, kinds and "show invalidated"."""
        params = request.query_params
        error: Problem | None = None
        hits: list[MemoryHit] = []
        query: MemorySearchQuery | None = None
        try:
            query = search_from_params(
                request, default_limit=_DEFAULT_PAGE_LIMIT, clock=store_clock(self.store)
            )
            with call_context(run_id=DASHBOARD_RUN_ID):
                hits = await self._reader.search(query)
        except MemoryValidationError as exc:
            error = Problem.of(exc)
        scope_text = ", ".join(params.getlist("scope"))
        charts: tuple[Chart | None, Chart | None] = (None, None)
        saved_since: int | None = None
        if query is not None:
            scope_text = format_scope(query.scope)
            if query.scope:
                listing = await self._scope_listing(query.scope)
                charts = self._scope_charts(query.scope, listing)
                if query.as_of is not None:
                    saved_since = sum(1 for r in listing if r.created_at > query.as_of)
        as_of = query.as_of if query is not None else None
        now = utc_now()
        return self.render(
            request,
            "records.html",
            status_code=422 if error else 200,
            active="records",
            error=error,
            hits=hits,
            limit=query.limit if query else _DEFAULT_PAGE_LIMIT,
            scope_text=scope_text,
            query_text=params.get("q", ""),
            since_text=params.get("since", ""),
            until_text=params.get("until", ""),
            kinds=params.getlist("kind"),
            all_kinds=MEMORY_KINDS,
            include_invalidated=params.get("invalidated") == "1",
            include_expired=params.get("expired") == "1",
            deleted=params.get("deleted", ""),
            kinds_chart=charts[0],
            recall_chart=charts[1],
            as_of=as_of,
            as_of_text=params.get("as_of", ""),
            request_without_as_of=urlencode(
                [(key, value) for key, value in params.multi_items() if key != "as_of"]
            ),
            saved_since=saved_since,
            changed_since=[
                hit.record.id for hit in hits if as_of and hit.record.status(now) != "valid"
            ],
        )

    async def _scope_listing(self, scope: dict[str, str]) -> list[MemoryRecord]:
        """A scope's records, every status, the newest 1000. Read from the store
        underneath: not a feed event."""
        listing = MemorySearchQuery(
            scope=scope, include_invalidated=True, include_expired=True, limit=MAX_LIMIT
        )
        return [hit.record for hit in await self._unobserved_store.search(listing)]

    def _scope_charts(
        self, scope: dict[str, str], records: list[MemoryRecord]
    ) -> tuple[Chart | None, Chart | None]:
        """The records page's pictures of a scope: its records by kind over the days
        they were said, and its recent recall blocks against their budget (from the
        events this lens holds)."""
        held = [*self._bus.replay(), *(self._lens_bus.replay() if self._lens_bus else ())]
        events = [event for event in held if scope_matches(event.scope, scope)]
        return kinds_over_time(records), recall_fullness(events)

    async def record(self, request: Request) -> HTMLResponse:
        """``/records/{id}``: every field, provenance, and the supersede chain both ways."""
        return await self._record_page(request, request.path_params["record_id"])

    async def _record_page(
        self,
        request: Request,
        record_id: str,
        *,
        error: Problem | None = None,
        status_code: int = 200,
    ) -> HTMLResponse:
        record = await self._unobserved_store.get(record_id)
        if record is None:
            return self.error_page(
                request, 404, "Record not found", f"No record has the id {record_id!r}."
            )
        chain = await supersede_chain(self._unobserved_store, record)
        payload_json = None
        if record.payload is not None:
            payload_json = json.dumps(record.payload, indent=2, ensure_ascii=False)
        return self.render(
            request,
            "record.html",
            status_code=status_code,
            active="records",
            error=error,
            record=record,
            status=record.status(utc_now()),
            chain=chain,
            scope_text=format_scope(record.scope),
            payload_json=payload_json,
            max_reason_chars=MAX_REASON_CHARS,
        )

    async def invalidate_form(self, request: Request) -> Response:
        """``POST /records/{id}/invalidate``: the record page's form; back to the record."""
        record_id: str = request.path_params["record_id"]
        try:
            form = await read_form(request)
            reason = check_reason(form.get("reason"))
            with call_context(run_id=DASHBOARD_RUN_ID):
                await self.store.invalidate(record_id, reason)
        except MemoryValidationError as exc:
            return await self._record_page(
                request, record_id, error=Problem.of(exc), status_code=422
            )
        except MemoryNotFoundError:
            return self.error_page(
                request, 404, "Record not found", f"No record has the id {record_id!r}."
            )
        root = request.scope.get("root_path", "")
        return RedirectResponse(f"{root}/records/{quote(record_id, safe='')}", status_code=303)

    async def delete_form(self, request: Request) -> Response:
        """``POST /records/{id}/delete``: forget a record for good (the form must confirm)."""
        record_id: str = request.path_params["record_id"]
        try:
            form = await read_form(request)
            if form.get("confirm") != "yes":
                raise MemoryValidationError(
                    "confirm", "tick the box to confirm that the record is forgotten for good"
                )
        except MemoryValidationError as exc:
            return await self._record_page(
                request, record_id, error=Problem.of(exc), status_code=422
            )
        record = await self._unobserved_store.get(record_id)
        if record is None:
            return self.error_page(
                request, 404, "Record not found", f"No record has the id {record_id!r}."
            )
        with call_context(run_id=DASHBOARD_RUN_ID):
            await self.store.delete(record_id)
        root = request.scope.get("root_path", "")
        query = urlencode({"scope": format_scope(record.scope), "deleted": record_id})
        return RedirectResponse(f"{root}/records?{query}", status_code=303)

    async def recall(self, request: Request) -> HTMLResponse:
        """``/recall``: the exact turn-1 block an agent in a scope would get for a text."""
        params = request.query_params
        error: Problem | None = None
        recall: Recall | None = None
        block: str | None = None
        scope: dict[str, str] = {}
        try:
            scope = parse_scope_text(params.getlist("scope"))
            budget = int_param(params, "budget", DEFAULT_BUDGET_CHARS, _MAX_BUDGET_CHARS)
            text = params.get("text")
            if text is not None:
                if len(text) > MAX_CONTENT_CHARS:
                    raise MemoryValidationError(
                        "text", f"is {len(text)} characters; the maximum is {MAX_CONTENT_CHARS}"
                    )
                recall = await assemble_recall(
                    self._reader, scope, text, budget_chars=budget, run_id=DASHBOARD_RUN_ID
                )
                block = render_recall(recall)
        except MemoryValidationError as exc:
            error = Problem.of(exc)
        except ConfigurationError:  # assemble_recall refuses an empty scope
            error = Problem("scope", "give the scope the agent would recall for (key=value)")
        return self.render(
            request,
            "recall.html",
            status_code=422 if error else 200,
            active="recall",
            error=error,
            recall=recall,
            block=block,
            scope_text=format_scope(scope) or ", ".join(params.getlist("scope")),
            user_text=params.get("text", ""),
            budget_text=params.get("budget", ""),
            default_budget=DEFAULT_BUDGET_CHARS,
        )

    def not_found(self, request: HTTPConnection) -> HTMLResponse:
        """The page for an unknown address."""
        return self.error_page(request, 404, "Not found", "There is no page at this address.")
