"""The person page: everything memory holds for one scope, its JSONL export, and
forgetting it.

* ``GET /person?scope=…[&as_of=…]``: the page (:mod:`._person_model`);
* ``GET /person/export?scope=…``: every record of the scope as JSONL, a download;
* ``GET /person/forget?scope=…``: the confirmation, naming what would go
  (:func:`recallstore._forget_preview.preview_forget`, the CLI's preview too);
* ``POST /person/forget``: forget, when the form's ``confirm`` is the scope typed again;
* ``GET /person/forgotten``: what went, in counts, never naming the scope.

The POST is a change: the token gate refuses it without the token and, carried by the
cookie, from another origin (``_auth``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from recallstore._forget_preview import preview_forget
from recallstore.backends._forget_traces import provenance_of, scrub_envelope
from recallstore.context import call_context
from recallstore.dashboard._pages import DashboardPages, Problem
from recallstore.dashboard._person_model import read_person
from recallstore.dashboard._requests import DASHBOARD_RUN_ID, as_of_param, read_form
from recallstore.errors import ConfigurationError, MemoryValidationError, StoreUnavailableError
from recallstore.events import EventBus, MemoryEvent, ObservedMemoryStore
from recallstore.jsonl import iter_records
from recallstore.scope_text import format_scope, parse_scope_text
from recallstore.store import FORGET_EXTENSION, MemoryStore, store_clock

__all__ = ["PersonView"]


def _scope_of(values: list[str]) -> dict[str, str]:
    """The person's scope from the query or form; at least one pair."""
    scope = parse_scope_text(values)
    if not scope:
        raise MemoryValidationError("scope", "name the person's scope (key=value, e.g. user=ana)")
    if empty := [key for key, value in scope.items() if not value]:
        raise MemoryValidationError("scope", f"{empty[0]}= has no value", scope)
    return scope


def _scrubbed(
    mark: int,
    ids: frozenset[str],
    provenance: frozenset[str],
    scope: dict[str, str],
    event: MemoryEvent,
) -> MemoryEvent | None:
    """An event up to ``mark`` as the forget left it in the journal: None when erased,
    scrubbed of the records' text and conversation and run ids, or as it was."""
    if event.id > mark:
        return event
    kept = scrub_envelope(event.model_dump(mode="json"), ids, provenance, scope)
    if kept is None:
        return None
    if isinstance(kept, dict):
        return type(event).model_validate(kept)
    return event


class PersonView:
    """The person page's routes over the observed store (forget) and the one under it."""

    def __init__(
        self, pages: DashboardPages, store: ObservedMemoryStore, buses: list[EventBus]
    ) -> None:
        """``buses``: the feed's bus first, then the lens's own when it has one."""
        self._pages = pages
        self._observed = store
        self._store: MemoryStore = store.inner
        self._bus = buses[0]
        self._buses = buses

    async def page(self, request: Request) -> HTMLResponse:
        """``/person``: the profile, valid records by kind, timeline, chains, plans, events."""
        params = request.query_params
        values = params.getlist("scope")
        if not any(value.strip() for value in values):
            return self._pages.render(
                request,
                "person.html",
                active="person",
                person=None,
                error=None,
                scope_text="",
                as_of_text=params.get("as_of", ""),
            )
        try:
            scope = _scope_of(values)
            as_of = as_of_param(params.get("as_of"), store_clock(self._store))
            person = await read_person(
                self._store, self._bus, scope, now=store_clock(self._store)(), as_of=as_of
            )
        except MemoryValidationError as exc:
            return self._pages.render(
                request,
                "person.html",
                status_code=422,
                active="person",
                person=None,
                error=Problem.of(exc),
                scope_text=", ".join(values),
                as_of_text=params.get("as_of", ""),
            )
        return self._pages.render(
            request,
            "person.html",
            active="person",
            person=person,
            error=None,
            scope_text=format_scope(scope),
            as_of_text=params.get("as_of", ""),
            can_forget=FORGET_EXTENSION in self._store.capabilities().extensions,
        )

    async def export(self, request: Request) -> Response:
        """``/person/export``: every record of the scope (every status) as JSONL, oldest
        first, as ``recallstore export --scope`` writes it."""
        try:
            scope = _scope_of(request.query_params.getlist("scope"))
        except MemoryValidationError as exc:
            return self._pages.error_page(request, 422, "Bad scope", exc.message)
        store = self._store

        async def lines() -> AsyncIterator[str]:
            async for record in iter_records(store, scope):
                yield record.model_dump_json() + "\n"

        return StreamingResponse(
            lines(),
            media_type="application/x-ndjson",
            headers={
                "Content-Disposition": 'attachment; filename="memory-of-a-person.jsonl"',
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
            },
        )

    async def forget_page(self, request: Request) -> HTMLResponse:
        """``GET /person/forget``: what forgetting the scope would take, and the form."""
        try:
            scope = _scope_of(request.query_params.getlist("scope"))
        except MemoryValidationError as exc:
            return self._pages.error_page(request, 422, "Bad scope", exc.message)
        return await self._confirmation(request, scope)

    async def _confirmation(
        self,
        request: Request,
        scope: dict[str, str],
        *,
        error: Problem | None = None,
        status_code: int = 200,
    ) -> HTMLResponse:
        preview = await preview_forget(self._store, scope)
        return self._pages.render(
            request,
            "forget.html",
            status_code=status_code,
            active="person",
            error=error,
            preview=preview,
            scope_text=format_scope(scope),
        )

    async def forget(self, request: Request) -> Response:
        """``POST /person/forget``: forget the scope once its text is typed again."""
        try:
            form = await read_form(request)
            scope = _scope_of([form.get("scope", "")])
        except MemoryValidationError as exc:
            return self._pages.error_page(request, 422, "Nothing forgotten", exc.message)
        typed = form.get("confirm", "")
        try:
            confirmed = bool(typed.strip()) and parse_scope_text([typed]) == scope
        except MemoryValidationError:
            confirmed = False
        if not confirmed:
            problem = Problem(
                "confirm",
                f"type the scope exactly ({format_scope(scope)}) to forget it; nothing was "
                "forgotten",
            )
            return await self._confirmation(request, scope, error=problem, status_code=422)
        preview = await preview_forget(self._store, scope)
        records = [record async for record in iter_records(self._store, scope)]
        ids = frozenset(record.id for record in records)
        provenance = frozenset().union(*(provenance_of(record) for record in records))
        marks = [bus.last_id for bus in self._buses]
        try:
            with call_context(run_id=DASHBOARD_RUN_ID):
                removed = await self._observed.forget(scope)
        except ConfigurationError:
            return self._pages.error_page(
                request, 409, "Nothing forgotten", "This store cannot forget a scope."
            )
        except StoreUnavailableError as exc:
            return self._pages.error_page(request, 503, "Nothing forgotten", exc.reason)

        for bus, mark in zip(self._buses, marks, strict=True):
            # The events as the forget left them in the journal, in the lens's memory
            # too; the forget's own event (published after ``mark``) stays.
            bus.rewrite(partial(_scrubbed, mark, ids, provenance, scope))
        root = request.scope.get("root_path", "")
        counts = [("records", str(removed))]
        counts += [(f"kind_{kind}", str(count)) for kind, count in preview.by_kind.items()]
        counts.append(("plans", str(len(preview.plans))))
        if preview.journal_erased is not None:
            counts.append(("erased", str(preview.journal_erased)))
            counts.append(("scrubbed", str(preview.journal_scrubbed)))
        return RedirectResponse(f"{root}/person/forgotten?{urlencode(counts)}", status_code=303)

    async def forgotten(self, request: Request) -> HTMLResponse:
        """``/person/forgotten``: what the forget took, in numbers only."""
        params = request.query_params
        kinds = [
            (key.removeprefix("kind_"), value)
            for key, value in params.multi_items()
            if key.startswith("kind_") and value.isdigit()
        ]
        numbers = {
            name: params.get(name, "")
            for name in ("records", "plans", "erased", "scrubbed")
            if params.get(name, "").isdigit()
        }
        return self._pages.render(
            request,
            "forgotten.html",
            active="person",
            numbers=numbers,
            kinds=kinds,
        )
