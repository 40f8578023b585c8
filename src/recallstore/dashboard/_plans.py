"""The lens's consolidation plans: a list, a page per plan, JSON, and revert.

``/plans`` lists the plans applied to the store (newest first, optionally those whose
scope contains a filter), each with its state (applied or reverted), its proposers and
its diff, each record in it with the day it was said; ``/plans/{id}`` is one plan,
with a revert form (a ticked confirmation); ``/api/plans`` gives the list as JSON.
Plans are read from the store's ``"revise"`` extension; a store without it shows that
it keeps none. Reverting (``POST /plans/{id}/revert``) is a change: the token gate
refuses it without the token or from another origin, and it is journaled with run
``dashboard``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from recallstore.consolidation import Plan, read_kept_plans, revert_plan
from recallstore.context import call_context
from recallstore.dashboard._pages import DashboardPages, Problem
from recallstore.dashboard._requests import DASHBOARD_RUN_ID, read_form
from recallstore.errors import (
    ConfigurationError,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
    StoreUnavailableError,
)
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
                    "rows": await self._rows(plan),
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
        for plan in plans:
            del plan["rows"]
        return JSONResponse({"plans": plans, "skipped": skipped})

    async def _rows(self, plan: Plan) -> list[dict[str, Any]]:
        """The plan's diff as rows for a table: sign, record, its days, and why; each
        record still stored with the day it was said (``observed_at``)."""
        rows: list[dict[str, Any]] = []

        async def row(sign: str, record_id: str, note: str) -> dict[str, Any]:
            planned = plan.records.get(record_id)
            stored = await self._store.get(record_id)
            forgotten = record_id in plan.forgotten
            text = planned.content if planned is not None else None
            return {
                "sign": sign,
                "id": record_id,
                "kind": planned.kind if planned is not None else "",
                "text": "(forgotten)" if forgotten else (text or "(text withheld)"),
                "said": stored.observed_at if stored is not None else None,
                "saved": planned.created_at if planned is not None else None,
                "note": note,
                "stored": stored is not None,
            }

        for op in plan.operations:
            if not op.changes:
                rows.append(await row("=", op.record_id, f"no-op: {op.reason}"))
                continue
            word = "superseded by" if op.action == "supersede" else "duplicate of"
            rows.append(await row("-", op.record_id, "becomes invalid"))
            rows.append(await row("=", op.target_id or "", f"{word}: {op.reason}"))
        return rows

    async def _one(self, plan_id: str) -> dict[str, Any] | None:
        if REVISE_EXTENSION not in self._store.capabilities().extensions:
            return None
        for plan, revision in (await read_kept_plans(self._store)).plans:
            if plan.id == plan_id:
                return {
                    "id": plan.id,
                    "scope": plan.scope,
                    "applied_at": format_timestamp(revision.created_at),
                    "reverted_at": None
                    if revision.reverted_at is None
                    else format_timestamp(revision.reverted_at),
                    "proposers": list(plan.proposers),
                    "changes": len(plan.changes),
                    "forgotten": list(plan.forgotten),
                    "rows": await self._rows(plan),
                    "diff": plan.diff(),
                }
        return None

    async def plan_page(
        self, request: Request, *, error: Problem | None = None, status_code: int = 200
    ) -> HTMLResponse:
        """``/plans/{id}``: one plan, its diff, and the revert form while applied."""
        plan_id: str = request.path_params["plan_id"]
        plan = await self._one(plan_id)
        if plan is None:
            return self._pages.error_page(
                request, 404, "Plan not found", f"No consolidation plan has the id {plan_id!r}."
            )
        return self._pages.render(
            request,
            "plan.html",
            status_code=status_code,
            active="plans",
            plan=plan,
            error=error,
            reverted=request.query_params.get("reverted") == "1",
        )

    async def revert(self, request: Request) -> Response:
        """``POST /plans/{id}/revert``: restore what the plan changed, once confirmed."""
        plan_id: str = request.path_params["plan_id"]
        try:
            form = await read_form(request)
            if form.get("confirm") != "yes":
                raise MemoryValidationError(
                    "confirm", "tick the box to confirm that the plan's changes are undone"
                )
            with call_context(run_id=DASHBOARD_RUN_ID):
                await revert_plan(self._store, plan_id)
        except MemoryValidationError as exc:
            return await self.plan_page(request, error=Problem.of(exc), status_code=422)
        except MemoryConflictError as exc:
            problem = Problem("plan", f"not reverted: {exc.reason}")
            return await self.plan_page(request, error=problem, status_code=409)
        except (MemoryNotFoundError, ConfigurationError):  # no such plan, or no plans kept
            return self._pages.error_page(
                request, 404, "Plan not found", f"No consolidation plan has the id {plan_id!r}."
            )
        except StoreUnavailableError as exc:
            return self._pages.error_page(request, 503, "Plan not reverted", exc.reason)
        root = request.scope.get("root_path", "")
        return RedirectResponse(
            f"{root}/plans/{quote(plan_id, safe='')}?reverted=1", status_code=303
        )
