"""``consolidate``, ``apply``, ``revert``: a plan made from a store, applied and undone.

``consolidate`` only reads. ``apply`` goes through the store's ``"revise"`` extension
(:mod:`recallstore.store.revise`): one transaction, every record still valid or nothing
changes, one journal event per operation, and the plan kept in the store so that
``revert`` (and the dashboard) can read it back by id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import cast

from recallstore.consolidation.plan import Operation, Plan, PlannedRecord, Rejection
from recallstore.consolidation.proposers import DEFAULT_PROPOSERS, Proposer
from recallstore.consolidation.validate import DEFAULT_CAP, check_proposals
from recallstore.errors import ConfigurationError, MemoryValidationError
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

__all__ = ["apply_plan", "consolidate", "kept_plans", "revert_plan", "scope_records"]


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
    return await revising.revise(plan.id, plan.scope, changes, plan.model_dump_json())


async def revert_plan(store: MemoryStore, plan_id: str) -> Plan:
    """Restore every record plan ``plan_id`` changed to what it held before; the plan."""
    revision = await _revising(store).revert_revision(plan_id)
    return Plan.model_validate_json(revision.body)


async def kept_plans(
    store: MemoryStore, scope: Mapping[str, str] | None = None
) -> list[tuple[Plan, StoredRevision]]:
    """Applied plans whose scope contains ``scope``, newest first, with their state."""
    revisions = await _revising(store).revisions(scope)
    return [(Plan.model_validate_json(r.body), r) for r in revisions]
