"""The lens's consolidation plans: a read-only page and JSON, with each plan's diff.

``/plans`` lists the plans applied to the store (newest first, optionally those whose
scope contains a filter), each with its state (applied or reverted), its proposers and
its diff; ``/api/plans`` gives the same as JSON. Plans are read from the store's
``"revise"`` extension; a store without it shows that it keeps none. Nothing here
changes the store: apply and revert are the command line's (``recallstore
consolidate``), where an operator confirms them.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse

from recallstore.consolidation import read_kept_plans
from recallstore.dashboard._pages import DashboardPages
from recallstore.errors import MemoryValidationError
from recallstore.records import format_timestamp
from recallstore.scope_text import format_scope, parse_scope_text
from recallstore.store import REVISE_EXTENSION, MemoryStore

__all__ = ["PlansView"]


class PlansView:
    """The ``/plans`` page and ``/api/plans``, over the unobserved store."""

    def __init__(self, pages: DashboardPages, store: MemoryStore) -> None:
        self._pages = pages
        self._store = store

    async def _plans(
        self, request: Request
    ) -> tuple[list[dict[str, Any]], list[dict[str, str]], str, str | None]:
        try:
            scope = parse_scope_text(request.query_params.getlist("scope"))
        except MemoryValidationError as exc:
            return [], [], "", exc.message
        if REVISE_EXTENSION not in self._store.capabilities().extensions:
            return [], [], format_scope(scope), None
        kept = await read_kept_plans(self._store, scope)
        # Revisions another caller of revise kept: named, with why they show no plan.
        skipped = [{"id": revision.id, "reason": reason} for revision, reason in kept.skipped]
        shown = []
        for plan, revision in kept.plans:
            shown.append(
                {
                    "id": plan.id,
                    "scope": plan.scope,
                    "scope_text": format_scope(plan.scope),
                    "applied_at": format_timestamp(revision.created_at),
                    "reverted_at": None
                    if revision.reverted_at is None
                    else format_timestamp(revision.reverted_at),
                    "proposers": list(plan.proposers),
                    "changes": len(plan.changes),
                    "forgotten": list(plan.forgotten),
                    "diff": plan.diff(),
                    "plan": plan.model_dump(mode="json"),
                }
            )
        return shown, skipped, format_scope(scope), None

    async def page(self, request: Request) -> HTMLResponse:
        """``/plans``: the applied consolidation plans, with their diffs."""
        plans, skipped, scope_text, error = await self._plans(request)
        return self._pages.render(
            request,
            "plans.html",
            status_code=422 if error else 200,
            active="plans",
            plans=plans,
            skipped=skipped,
            scope_text=scope_text,
            error=None if error is None else {"field": "scope", "message": error},
            keeps_plans=REVISE_EXTENSION in self._store.capabilities().extensions,
        )

    async def api(self, request: Request) -> JSONResponse:
        """``/api/plans``: the same as JSON."""
        plans, skipped, _, error = await self._plans(request)
        if error is not None:
            return JSONResponse({"error": "invalid_scope", "message": error}, status_code=422)
        return JSONResponse({"plans": plans, "skipped": skipped})
