"""``consolidate``, ``apply``, ``revert``: a plan made from a store, applied and undone.

``consolidate`` only reads. ``apply`` goes through the store's ``"revise"`` extension
(:mod:`recallstore.store.revise`): one transaction, every record still valid or nothing
changes, one journal event per operation, and the plan kept in the store so that
``revert`` (and the dashboard) can read it back by id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from pydantic import ValidationError

from recallstore.consolidation.plan import Operation, Plan, PlannedRecord, Rejection
from recallstore.consolidation.proposers import DEFAULT_PROPOSERS, Proposer
from recallstore.consolidation.validate import DEFAULT_CAP, check_proposals
from recallstore.errors import ConfigurationError, MemoryNotFoundError, MemoryValidationError
from recallstore.jsonl import iter_records
from recallstore.records import MemoryRecord
from recallstore.store import (
    REVISE_EXTENSION,
    MemoryStore,
    RecordChange,
    StoredRevision,
    SupportsRevise,
    utc_now,
)
from recallstore.values import canonical_scope

__all__ = [
    "KeptPlans",
    "apply_plan",
    "consolidate",
    "kept_plans",
    "plan_of",
    "read_kept_plans",
    "revert_plan",
    "scope_records",
]


async def scope_records(store: MemoryStore, scope: Mapping[str, str]) -> list[MemoryRecord]:
    """Every record of exactly ``scope`` (invalid and expired included), oldest first."""
    pairs = canonical_scope(scope)
    return [record async for record in iter_records(store, pairs) if record.scope == pairs]


async def consolidate(
    store: MemoryStore,
    scope: Mapping[str, str],
    *,
    proposers: Sequence[Proposer] = DEFAULT_PROPOSERS,
    cap: int = DEFAULT_CAP,
) -> Plan:
    """A validated plan for the valid records of exactly ``scope``; changes nothing.

    Each proposer sees the records the earlier ones left valid. ``scope`` must be
    non-empty (:class:`~recallstore.errors.MemoryValidationError`).
    """
    pairs = canonical_scope(scope)
    if not pairs:
        raise MemoryValidationError("scope", "consolidation needs a non-empty scope", {})
    if cap < 0:
        raise MemoryValidationError("cap", "must be >= 0", cap)
    valid = {r.id: r for r in await scope_records(store, pairs) if not r.is_invalidated}
    remaining = dict(valid)
    proposed: list[tuple[str, Operation]] = []
    operations: list[Operation] = []
    rejected: list[Rejection] = []
    for proposer in proposers:
        for op in await proposer.propose(list(remaining.values())):
            proposed.append((proposer.name, op))
        operations, rejected = check_proposals(proposed, valid, cap=cap)
        for op in operations:
            if op.changes:
                remaining.pop(op.record_id, None)
    named = {op.record_id for op in operations} | {op.target_id or "" for op in operations}
    records = {i: PlannedRecord.of(valid[i]) for i in sorted(named) if i in valid}
    created = utc_now()
    fingerprint = hashlib.sha256(
        "\n".join([repr(pairs), created.isoformat(), *map(repr, operations)]).encode()
    ).hexdigest()
    return Plan(
        id="plan_" + fingerprint[:20],
        scope=pairs,
        created_at=created,
        proposers=tuple(proposer.name for proposer in proposers),
        operations=tuple(operations),
        records=records,
        rejected=tuple(rejected),
    )


def _revising(store: MemoryStore) -> SupportsRevise:
    if REVISE_EXTENSION not in store.capabilities().extensions or not isinstance(
        store, SupportsRevise
    ):
        raise ConfigurationError(
            f"{type(store).__name__} lacks the {REVISE_EXTENSION!r} extension, "
            "so it cannot apply or revert a consolidation plan"
        )
    return cast(SupportsRevise, store)


def _reason(plan: Plan, op: Operation) -> str:
    word = "superseded by" if op.action == "supersede" else "duplicate of"
    return f"consolidation {plan.id}: {word} {op.target_id}: {op.reason}"


async def apply_plan(store: MemoryStore, plan: Plan) -> StoredRevision | None:
    """Apply ``plan``'s changes in one transaction and keep it; None when it has none.

    Raises :class:`~recallstore.errors.MemoryConflictError` (nothing changed) when a
    record it names was changed since it was made.
    """
    revising = _revising(store)
    if plan.only_noops:
        return None
    changes = [
        RecordChange(
            id=op.record_id,
            reason=_reason(plan, op),
            # A duplicate points at the record kept too: every chain walk reaches it.
            superseded_by=op.target_id,
        )
        for op in plan.changes
    ]
    return await revising.revise(
        plan.id,
        plan.scope,
        changes,
        plan.model_dump_json(),
        redacted_body=plan.redacted().model_dump_json(),
    )


def plan_of(revision: StoredRevision) -> Plan | str:
    """The plan ``revision`` keeps, as of now (scope and ``forgotten`` from the
    revision); else why it holds none (a revision another caller of ``revise`` kept,
    or a plan kept before redaction existed whose text a forget erased)."""
    if not revision.body:
        if revision.forgotten:
            return (
                "its text was erased when records it named were forgotten "
                f"({', '.join(revision.forgotten)})"
            )
        return "not a consolidation plan (an empty body)"
    try:
        plan = Plan.model_validate_json(revision.body)
    except (ValidationError, MemoryValidationError, ValueError):
        if (reverted := _distillation_reverted(revision.body)) is not None:
            return f"the revert of distillation {reverted}, not a consolidation plan"
        return "not a consolidation plan (kept through revise by another caller)"
    if plan.id != revision.id:
        return f"not a consolidation plan (its body names plan {plan.id})"
    if not (plan.withheld or revision.forgotten):
        return plan
    return plan.model_copy(update={"scope": revision.scope, "forgotten": revision.forgotten})


def _distillation_reverted(body: str) -> str | None:
    """The distillation a revision's body says it reverted (``revert_distillation``)."""
    try:
        found = json.loads(body)
    except ValueError:
        return None
    plan = found.get("distillation_reverted") if isinstance(found, dict) else None
    return plan if isinstance(plan, str) else None


async def _read_back(store: MemoryStore, plan: Plan) -> Plan:
    """A redacted plan with the text of the records still stored read back from them
    (a record's content never changes); the forgotten ones stay without."""
    if not plan.withheld:
        return plan
    records = dict(plan.records)
    for key, planned in plan.records.items():
        if planned.content is None and key not in plan.forgotten:
            found = await store.get(key)
            if found is not None:
                records[key] = planned.model_copy(update={"content": found.content})
    return plan.model_copy(update={"records": records})


@dataclass(frozen=True)
class KeptPlans:
    """What :func:`read_kept_plans` found: the plans, and the revisions that are not."""

    plans: list[tuple[Plan, StoredRevision]] = field(default_factory=list)
    """Applied plans, newest first, each with the revision that keeps it (its state)."""
    skipped: list[tuple[StoredRevision, str]] = field(default_factory=list)
    """Kept revisions that hold no plan, each with why (:func:`plan_of`)."""


async def read_kept_plans(store: MemoryStore, scope: Mapping[str, str] | None = None) -> KeptPlans:
    """Kept revisions whose scope contains ``scope``, newest first: the plans (redacted
    ones with what is still stored read back), and the revisions that hold none."""
    kept = KeptPlans()
    for revision in await _revising(store).revisions(scope):
        found = plan_of(revision)
        if isinstance(found, str):
            kept.skipped.append((revision, found))
        else:
            kept.plans.append((await _read_back(store, found), revision))
    return kept


async def revert_plan(store: MemoryStore, plan_id: str) -> Plan:
    """Restore every record plan ``plan_id`` changed to what it held before; the plan.

    Records deleted since are skipped (the plan lists them in ``forgotten``). A
    ``plan_id`` that is not a string, or holds NUL or a lone surrogate, raises
    :class:`~recallstore.errors.MemoryValidationError`; a kept revision that is no
    plan raises it too, and is not reverted.
    """
    revising = _revising(store)
    revision = await revising.revision(plan_id)
    if revision is None:
        raise MemoryNotFoundError(plan_id)
    if isinstance(reason := plan_of(revision), str):
        raise MemoryValidationError("plan_id", f"revision {plan_id!r} is {reason}", plan_id)
    reverted = plan_of(await revising.revert_revision(plan_id))
    assert not isinstance(reverted, str)  # the same body, checked above
    return await _read_back(store, reverted)


async def kept_plans(
    store: MemoryStore, scope: Mapping[str, str] | None = None
) -> list[tuple[Plan, StoredRevision]]:
    """Applied plans whose scope contains ``scope``, newest first, with their state;
    revisions holding no plan are left out (:func:`read_kept_plans` says which)."""
    return (await read_kept_plans(store, scope)).plans
