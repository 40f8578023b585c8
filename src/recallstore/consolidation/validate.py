"""Every proposal validated before it can be in a plan: scope, ids, cap, reason.

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

from recallstore.consolidation.plan import Operation, Rejection
from recallstore.consolidation.proposers import UnusableProposal
from recallstore.records import MemoryRecord

__all__ = ["DEFAULT_CAP", "check_proposals"]

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
