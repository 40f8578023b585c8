"""Every proposal validated before it can be in a plan: scope, ids, cap, reason.

The same holds for a distillation's facts (:func:`check_facts`): each citation a valid
captured record of exactly the plan's scope, a reason, content a record can hold, a cap.

A proposal is refused (kept in ``Plan.rejected`` with the problem, never applied) when
it names a record that is not a valid record of exactly the plan's scope, points at a
replacement that is not one either (or at itself) or that an earlier operation of the
plan already changed, names a record an earlier operation already names, or comes after
the cap, or is an :class:`~recallstore.consolidation.proposers.UnusableProposal` (its
own problem). A record kept as a replacement may itself be replaced later in the plan: its
chain then leads on to the later one, and every chain ends at a record the plan leaves
valid (a replacement is always valid when it is chosen, so no chain can loop).
The operation model itself refuses a missing reason and a wrong target field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from recallstore.consolidation.distil import (
    Citation,
    FactRejection,
    PlannedFact,
    ProposedFact,
    UnusableFact,
)
from recallstore.consolidation.plan import Operation, Rejection
from recallstore.consolidation.proposers import UnusableProposal
from recallstore.errors import MemoryValidationError
from recallstore.records import MemoryRecord, MemoryWriteInput
from recallstore.sameness import normal_form

__all__ = ["DEFAULT_CAP", "DEFAULT_FACT_CAP", "check_facts", "check_proposals"]

DEFAULT_CAP: Final = 1_000
"""Operations one consolidation run may change at most; the rest are rejected."""


def check_proposals(
    proposed: Sequence[tuple[str, Operation]],
    valid: Mapping[str, MemoryRecord],
    *,
    cap: int = DEFAULT_CAP,
) -> tuple[list[Operation], list[Rejection]]:
    """Split ``(proposer name, operation)`` pairs into accepted and rejected.

    ``valid`` holds the valid records of exactly the plan's scope, by id.
    """
    accepted: list[Operation] = []
    rejected: list[Rejection] = []
    invalidated: set[str] = set()
    looked_at: set[str] = set()
    for proposer, op in proposed:
        problem = _problem(op, valid, invalidated, looked_at)
        if problem is None and op.changes and len(invalidated) >= cap:
            problem = f"over the cap of {cap} changes per run"
        if problem is not None:
            if isinstance(op, UnusableProposal):  # kept as the plain operation it is
                op = Operation.model_validate(op.model_dump(exclude={"problem"}))
            rejected.append(Rejection(proposer=proposer, operation=op, problem=problem))
            continue
        accepted.append(op)
        looked_at.add(op.record_id)
        if op.changes:
            invalidated.add(op.record_id)
    return accepted, rejected


def _problem(
    op: Operation,
    valid: Mapping[str, MemoryRecord],
    invalidated: set[str],
    looked_at: set[str],
) -> str | None:
    if isinstance(op, UnusableProposal):
        return op.problem
    if op.record_id not in valid:
        return "not a valid record of this scope"
    if op.record_id in looked_at:
        return "an earlier operation of this plan already names this record"
    if not op.changes:
        return None
    target = op.target_id or ""
    if target == op.record_id:
        return "a record cannot replace itself"
    if target not in valid:
        return "its replacement is not a valid record of this scope"
    if target in invalidated:
        return "its replacement is changed by an earlier operation of this plan"
    return None


DEFAULT_FACT_CAP: Final = 100
"""Facts one distillation run may plan at most; the rest are rejected."""


def check_facts(
    proposed: Sequence[tuple[str, ProposedFact]],
    captured: Mapping[str, MemoryRecord],
    existing: Mapping[str, MemoryRecord],
    *,
    scope: Mapping[str, str],
    cap: int = DEFAULT_FACT_CAP,
) -> tuple[list[PlannedFact], list[FactRejection]]:
    """Split ``(distiller name, proposed fact)`` pairs into planned facts and rejections.

    ``captured`` holds the valid captured records of exactly ``scope``, by id: every
    citation must name one. ``existing`` holds the valid records of the scope that are
    not captured, by the normal form of their content (:mod:`recallstore.sameness`): a
    fact equal to one corroborates it instead of being written again. A fact equal to
    an earlier one of the plan adds its citations to it. A fact is refused for a blank
    reason, content a record cannot hold, a citation of anything else, evidence its
    equal record already has, or when it comes after ``cap`` facts.
    """
    planned: list[PlannedFact] = []
    rejected: list[FactRejection] = []
    by_form: dict[str, int] = {}
    for proposer, fact in proposed:
        problem = _fact_problem(fact, captured, scope)
        form = normal_form(fact.content)
        citations = tuple(
            _citation(captured[i]) for i in dict.fromkeys(fact.cites) if problem is None
        )
        equal = existing.get(form)
        if problem is None and equal is not None:
            known = {p.conversation_id for p in (equal.provenance, *equal.supports) if p}
            if all(c.conversation_id in known for c in citations):
                problem = f"record {equal.id} already states it, with these conversations"
        if problem is None and form in by_form:  # the same fact again: one fact, more turns
            earlier = planned[by_form[form]]
            merged = tuple(dict.fromkeys((*earlier.citations, *citations)))
            planned[by_form[form]] = earlier.model_copy(update={"citations": merged})
            continue
        if problem is None and len(planned) >= cap:
            problem = f"over the cap of {cap} facts per run"
        if problem is not None:
            if isinstance(fact, UnusableFact):  # kept as the plain proposal it is
                fact = ProposedFact.model_validate(fact.model_dump(exclude={"problem"}))
            rejected.append(FactRejection(proposer=proposer, fact=fact, problem=problem))
            continue
        by_form[form] = len(planned)
        planned.append(
            PlannedFact(
                content=fact.content.strip(),
                kind=fact.kind,
                reason=fact.reason.strip(),
                proposer=proposer,
                citations=citations,
                corroborates=None if equal is None else equal.id,
            )
        )
    return planned, rejected


def _fact_problem(
    fact: ProposedFact, captured: Mapping[str, MemoryRecord], scope: Mapping[str, str]
) -> str | None:
    if isinstance(fact, UnusableFact):
        return fact.problem
    if not fact.reason.strip():
        return "every fact needs a reason"
    try:
        MemoryWriteInput(scope=dict(scope), kind=fact.kind, content=fact.content)
    except MemoryValidationError as exc:
        return f"not a record's content: {exc.message}"
    for cited in fact.cites:
        if cited not in captured:
            return f"cites {cited!r}, which is not a valid captured record of this scope"
    return None


def _citation(record: MemoryRecord) -> Citation:
    """Where ``record`` was said: its conversation and turn (capture's payload)."""
    payload = record.payload if isinstance(record.payload, dict) else {}
    conversation = record.provenance.conversation_id if record.provenance else None
    if conversation is None and isinstance(payload.get("conversation_id"), str):
        conversation = str(payload["conversation_id"])
    message = payload.get("message", payload.get("message_id"))
    turn = message if isinstance(message, (int, str)) and not isinstance(message, bool) else None
    return Citation(record_id=record.id, conversation_id=conversation, message=turn)
