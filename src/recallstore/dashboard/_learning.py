"""The lens's learning page: candidates with their evidence, approve / reject / demote,
the evolution ledger, and the learned section of the system prompt with its sources.

``/learning?scope=…`` shows, for one exact scope: the **candidates** (valid notes with
evidence from two or more conversations, or distilled from captured ones), each with
quotes from the conversations behind it and the host's gate's verdict; the records
**promoted**, each with a demote form; the **ledger** as a timeline, newest first; and
the **prompt preview**: the ``<learned_instructions>`` block ``instantiate`` renders
(:func:`~recallstore.learning.assemble_learned`), each line linked to its record and to
the conversations it was learned from (``/learning/conversation``: the captured
transcript). The forms post to ``/learning/promote``, ``/learning/reject`` (the note is
invalidated: it no longer reaches the agent, even as a note) and ``/learning/demote``,
behind the lens's token and its same-origin rule for changes (``_auth``). Promotion
always goes through the host's gate; the lens supplies only a person's approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from recallstore.capture import CAPTURE_TAG
from recallstore.consolidation import DISTILLED_TAG, scope_records
from recallstore.context import call_context
from recallstore.dashboard._pages import DashboardPages
from recallstore.dashboard._requests import DASHBOARD_RUN_ID, read_form
from recallstore.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from recallstore.learning import assemble_learned
from recallstore.records import MemoryRecord, MemoryTarget
from recallstore.sameness import normal_form
from recallstore.scope_text import format_scope, parse_scope_text
from recallstore.store import (
    PROMOTE_EXTENSION,
    PROMOTION_KINDS,
    MemoryStore,
    PromotionGate,
    SupportsPromotion,
    conversations_of,
    store_clock,
)
from recallstore.store.learning import check_actor, check_ledger_reason

__all__ = ["LENS_ACTOR", "LearningView"]

LENS_ACTOR: Final = "memory lens"
"""The ledger's ``actor`` of what the lens does (the person is ``approved_by``)."""
_QUOTES_PER_CONVERSATION: Final = 2


class LearningView:
    """``/learning`` and its forms, over the store underneath the observed one."""

    def __init__(self, pages: DashboardPages, store: MemoryStore, gate: PromotionGate) -> None:
        self._pages = pages
        self._store = store
        self._gate = gate

    def _learning(self, *, changing: bool = False) -> SupportsPromotion | None:
        """The store's promote extension: reads from the store underneath (they leave
        no trace); changes through the observed store when it offers them (they show
        in the feed), else underneath (its journal records them)."""
        stores = (self._pages.store, self._store) if changing else (self._store,)
        for store in stores:
            if PROMOTE_EXTENSION in store.capabilities().extensions and isinstance(
                store, SupportsPromotion
            ):
                return store
        return None

    async def page(self, request: Request) -> HTMLResponse:
        """``/learning``: candidates, promotions, the ledger and the prompt preview."""
        try:
            scope = parse_scope_text(request.query_params.getlist("scope"))
        except MemoryValidationError as exc:
            return await self._render(request, {}, error=("scope", exc.message), status=422)
        return await self._render(request, scope)

    async def _render(
        self,
        request: Request,
        scope: dict[str, str],
        *,
        error: tuple[str, str] | None = None,
        status: int = 200,
    ) -> HTMLResponse:
        learning = self._learning()
        context: dict[str, Any] = {
            "scope_text": format_scope(scope),
            "learns": learning is not None,
            "candidates": [],
            "promoted": [],
            "ledger": [],
            "preview": None,
            "contents": {},
            "gate": self._gate,
            "kinds": PROMOTION_KINDS,
        }
        if learning is not None and scope:
            context.update(await self._state(learning, scope))
        return self._pages.render(
            request,
            "learning.html",
            status_code=status,
            active="learning",
            error=None if error is None else {"field": error[0], "message": error[1]},
            **context,
        )

    async def _state(self, learning: SupportsPromotion, scope: dict[str, str]) -> dict[str, Any]:
        now = store_clock(self._store)()
        records = await scope_records(self._store, scope)
        by_id = {r.id: r for r in records}
        captured = [r for r in records if CAPTURE_TAG in r.tags]
        promotions = await learning.promotions(scope)
        promoted_ids = {p.record_id for p in promotions}
        candidates = []
        for record in records:
            if record.id in promoted_ids or CAPTURE_TAG in record.tags:
                continue
            if record.status(now) != "valid":
                continue
            conversations = conversations_of(record)
            if len(conversations) < 2 and DISTILLED_TAG not in record.tags:
                continue
            probe = MemoryTarget(section="heuristic")
            decision = self._gate.evaluate(record, probe, now, approved_by="(approval)")
            candidates.append(
                {
                    "record": record,
                    "conversations": conversations,
                    "quotes": _quotes(record, by_id, captured),
                    "refusals": decision.refusals,
                }
            )
        promoted: list[dict[str, Any]] = []
        for p in promotions:
            found = by_id.get(p.record_id)
            shown = conversations_of(found) if found is not None else ()
            promoted.append({"promotion": p, "record": found, "conversations": shown})
        ledger = list(reversed(await learning.ledger(scope)))
        learned = await assemble_learned(self._store, scope, now=now)
        preview = None
        if learned.block is not None:
            preview = [
                {"text": text, "line": _line_of(text, learned.shown)}
                for text in learned.block.split("\n")
            ]
        return {
            "candidates": candidates,
            "promoted": promoted,
            "ledger": ledger,
            "preview": preview,
            "contents": {r.id: r.content for r in records},
        }

    # -- forms ---------------------------------------------------------------------
    async def _form(
        self, request: Request
    ) -> tuple[SupportsPromotion, dict[str, str], dict[str, str], MemoryRecord]:
        learning = self._learning(changing=True)
        if learning is None:
            raise MemoryValidationError("store", "this store does not learn (no promote extension)")
        form = await read_form(request)
        scope = parse_scope_text([form.get("scope", "")])
        if not scope:
            raise MemoryValidationError("scope", "give the record's scope (key=value)")
        record_id = form.get("record_id", "")
        record = await self._store.get(record_id) if record_id else None
        if record is None or record.scope != scope:
            raise MemoryNotFoundError(record_id or "(none)")
        return learning, scope, form, record

    async def _act(self, request: Request, action: str) -> Response:
        scope: dict[str, str] = {}
        try:
            learning, scope, form, record = await self._form(request)
            reason = check_ledger_reason(form.get("reason"))
            with call_context(run_id=DASHBOARD_RUN_ID):
                if action == "promote":
                    section = form.get("section", "")
                    await learning.promote(
                        scope,
                        record.id,
                        MemoryTarget(section=section),
                        gate=self._gate,
                        actor=LENS_ACTOR,
                        reason=reason,
                        approved_by=check_actor(form.get("approver"), "approver"),
                    )
                elif action == "demote":
                    await learning.demote(scope, record.id, actor=LENS_ACTOR, reason=reason)
                else:
                    await self._pages.store.invalidate(
                        record.id, f"rejected as a lesson in the memory lens: {reason}"[:1000]
                    )
        except MemoryValidationError as exc:
            return await self._render(request, scope, error=(exc.field, exc.message), status=422)
        except MemoryNotFoundError as exc:
            message = f"no record {exc.record_id!r} in this scope"
            return await self._render(request, scope, error=("record_id", message), status=404)
        except MemoryConflictError as exc:
            return await self._render(request, scope, error=(action, str(exc)), status=409)
        root = request.scope.get("root_path", "")
        query = urlencode({"scope": format_scope(scope)})
        return RedirectResponse(f"{root}/learning?{query}#ledger", status_code=303)

    async def promote_form(self, request: Request) -> Response:
        """``POST /learning/promote``: a person's approval; the host's gate decides."""
        return await self._act(request, "promote")

    async def demote_form(self, request: Request) -> Response:
        """``POST /learning/demote``: take a promotion back."""
        return await self._act(request, "demote")

    async def reject_form(self, request: Request) -> Response:
        """``POST /learning/reject``: the candidate is invalidated, with the reason."""
        return await self._act(request, "reject")

    async def conversation(self, request: Request) -> HTMLResponse:
        """``/learning/conversation?scope=…&id=…``: the captured turns of a conversation."""
        conversation_id = request.query_params.get("id", "")
        try:
            scope = parse_scope_text(request.query_params.getlist("scope"))
        except MemoryValidationError as exc:
            return self._pages.error_page(request, 422, "Bad scope", exc.message)
        turns = (
            [
                r
                for r in await scope_records(self._store, scope)
                if CAPTURE_TAG in r.tags and _conversation(r) == conversation_id
            ]
            if scope
            else []
        )
        turns.sort(key=_turn_order)
        return self._pages.render(
            request,
            "learning_conversation.html",
            active="learning",
            scope_text=format_scope(scope),
            conversation_id=conversation_id,
            turns=turns,
        )


def _conversation(record: MemoryRecord) -> str | None:
    return record.provenance.conversation_id if record.provenance else None


def _turn_order(record: MemoryRecord) -> tuple[int, int, int, str]:
    payload = record.payload if isinstance(record.payload, dict) else {}

    def number(key: str) -> int:
        value = payload.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return (number("message"), number("part"), number("chunk"), record.id)


def _quotes(
    record: MemoryRecord, by_id: Mapping[str, MemoryRecord], captured: list[MemoryRecord]
) -> list[dict[str, str]]:
    """What the conversations behind ``record`` said: the turns it cites (a distilled
    record's payload), else per conversation the captured turns sharing most words."""
    quotes: list[dict[str, str]] = []
    payload = record.payload if isinstance(record.payload, dict) else {}
    body = payload.get("distilled")
    cites = body.get("cites") if isinstance(body, dict) else None
    cited: set[str] = set()
    for cite in cites if isinstance(cites, list) else []:
        cited_id = cite.get("record_id") if isinstance(cite, dict) else None
        found = by_id.get(cited_id) if isinstance(cited_id, str) else None
        if found is not None:
            cited.add(_conversation(found) or "")
            quotes.append({"conversation": _conversation(found) or "", "text": found.content})
    words = set(normal_form(record.content).split())
    for conversation in conversations_of(record):
        if conversation in cited:
            continue
        shared = [
            (len(words & set(normal_form(r.content).split())), r)
            for r in captured
            if _conversation(r) == conversation
        ]
        ranked = sorted((s for s in shared if s[0]), key=lambda s: -s[0])
        for _, turn in ranked[:_QUOTES_PER_CONVERSATION]:
            quotes.append({"conversation": conversation, "text": turn.content})
    return quotes


def _line_of(text: str, shown: Any) -> Any:
    """The learned line a block line renders (it ends with its record id), or None."""
    for line in shown:
        if text.startswith("- ") and text.endswith(f"; record {line.record_id}]"):
            return line
    return None
