"""The feed's JSON routes: recent events in the order they happened, and what the
records they name say.

Events are numbered in the order they reach the journal, which is not the order they
happened: a process journals its searches and recalls in batches after its writes.
The feed orders by when each event occurred (its ``timestamp``), ties by id; the
page's script (``lens.js``) places live events by the same key.

Events never carry record content (unless the host opted in), so the page asks
``/api/snippets`` for the kind and the opening words of the records a row names.
That read goes to the store underneath the observed one: looking is not a memory
event, and nothing of it enters the stream, the journal or telemetry.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse

from recallstore._unicode import hidden_characters, is_hidden
from recallstore.dashboard._requests import int_param
from recallstore.errors import MemoryValidationError
from recallstore.events import EventBus, MemoryEvent
from recallstore.records import MemoryRecord
from recallstore.scope_text import parse_scope_text
from recallstore.store import MemoryStore, scope_matches, utc_now

__all__ = ["FeedApi", "feed_order", "snippet_of"]

SNIPPET_CHARS: Final = 120
"""Characters of content a feed row shows for a record."""
MAX_SNIPPET_IDS: Final = 100
"""Record ids one ``/api/snippets`` call may ask about."""


def feed_order(events: Iterable[MemoryEvent]) -> list[MemoryEvent]:
    """``events`` newest first by when they happened, ties by id (the journal's order)."""
    return sorted(events, key=lambda event: (event.timestamp, event.id), reverse=True)


def snippet_of(record: MemoryRecord) -> dict[str, Any]:
    """What a feed row shows for ``record``: kind, status, the opening words of its
    content (invisible characters taken out and counted, whitespace folded), the day it
    was said (``observed_at``, UTC) and the day it was saved when that differs."""
    hidden = len(hidden_characters(record.content))
    visible = "".join(ch for ch in record.content if not is_hidden(ch))
    text = " ".join(visible.split())
    if len(text) > SNIPPET_CHARS:
        text = text[: SNIPPET_CHARS - 1].rstrip() + "…"
    said = record.observed_at.astimezone(UTC).strftime("%Y-%m-%d")
    saved = record.created_at.astimezone(UTC).strftime("%Y-%m-%d")
    return {
        "kind": record.kind,
        "status": record.status(utc_now()),
        "snippet": text,
        "hidden_characters": hidden,
        "said": said,
        "saved": None if saved == said else saved,
    }


class FeedApi:
    """``/api/events`` and ``/api/snippets`` over one bus and the unobserved store."""

    def __init__(self, bus: EventBus, unobserved_store: MemoryStore) -> None:
        self._bus = bus
        self._store = unobserved_store

    async def events(self, request: Request) -> JSONResponse:
        """``GET /api/events``: the bus's retained events, newest first by when they
        happened; ``scope=`` keeps those whose scope holds the pairs, ``limit=`` (default
        and most: the bus's replay size) how many."""
        params = request.query_params
        try:
            scope = parse_scope_text(params.getlist("scope"))
            limit = int_param(params, "limit", self._bus.replay_size, self._bus.replay_size)
        except MemoryValidationError as exc:
            return _invalid(exc)
        kept = [event for event in self._bus.replay() if scope_matches(event.scope, scope)]
        ordered = feed_order(kept)[:limit]
        return JSONResponse({"events": [event.model_dump(mode="json") for event in ordered]})

    async def snippets(self, request: Request) -> JSONResponse:
        """``GET /api/snippets?id=…&id=…``: kind, status and a content snippet of each
        record still stored, by id; ids no longer stored are left out."""
        ids = list(dict.fromkeys(request.query_params.getlist("id")))
        if len(ids) > MAX_SNIPPET_IDS:
            return _invalid(
                MemoryValidationError("id", f"at most {MAX_SNIPPET_IDS} ids per call", len(ids))
            )
        found: dict[str, Any] = {}
        for record_id in ids:
            record = await self._store.get(record_id)
            if record is not None:
                found[record_id] = snippet_of(record)
        return JSONResponse({"records": found}, headers={"Cache-Control": "no-store"})


def _invalid(error: MemoryValidationError) -> JSONResponse:
    return JSONResponse(
        {"error": "validation", "field": error.field, "message": error.message}, status_code=422
    )
