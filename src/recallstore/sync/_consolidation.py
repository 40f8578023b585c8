"""Consolidation (:mod:`recallstore.consolidation`) as blocking calls on a
:class:`~recallstore.sync.SyncMemoryStore`: make a plan, apply it, list the kept ones,
revert one. Same names, parameters and semantics as the async functions, with a
``SyncMemoryStore`` where they take a store; proposers stay async (they run on the
store's loop)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recallstore.consolidation import run as _run
from recallstore.consolidation.plan import Plan
from recallstore.consolidation.proposers import DEFAULT_PROPOSERS, Proposer
from recallstore.consolidation.run import KeptPlans
from recallstore.consolidation.validate import DEFAULT_CAP
from recallstore.records import MemoryRecord
from recallstore.store import StoredRevision
from recallstore.sync._calls import run_on
from recallstore.sync._store import SyncMemoryStore

__all__ = [
    "apply_plan",
    "consolidate",
    "kept_plans",
    "read_kept_plans",
    "revert_plan",
    "scope_records",
]


def scope_records(store: SyncMemoryStore, scope: Mapping[str, str]) -> list[MemoryRecord]:
    """Every record of exactly ``scope`` (invalid and expired included), oldest first."""
    records: list[MemoryRecord] = run_on(store, "scope_records", _run.scope_records, scope)
    return records


def consolidate(
    store: SyncMemoryStore,
    scope: Mapping[str, str],
    *,
    proposers: Sequence[Proposer] = DEFAULT_PROPOSERS,
    cap: int = DEFAULT_CAP,
) -> Plan:
    """:func:`recallstore.consolidation.consolidate`, blocking: a validated plan of
    ``supersede``/``duplicate``/``noop`` operations for the valid records of exactly
    ``scope``; changes nothing."""
    plan: Plan = run_on(store, "consolidate", _run.consolidate, scope, proposers=proposers, cap=cap)
    return plan


def apply_plan(store: SyncMemoryStore, plan: Plan) -> StoredRevision | None:
    """:func:`recallstore.consolidation.apply_plan`, blocking: ``plan``'s changes in one
    transaction, the plan kept for :func:`revert_plan`; None when it has none. A record
    changed since the plan was made raises
    :class:`~recallstore.errors.MemoryConflictError` and nothing changes."""
    revision: StoredRevision | None = run_on(store, "apply_plan", _run.apply_plan, plan)
    return revision


def revert_plan(store: SyncMemoryStore, plan_id: str) -> Plan:
    """:func:`recallstore.consolidation.revert_plan`, blocking: every record plan
    ``plan_id`` changed restored to what it held before; the plan."""
    plan: Plan = run_on(store, "revert_plan", _run.revert_plan, plan_id)
    return plan


def read_kept_plans(store: SyncMemoryStore, scope: Mapping[str, str] | None = None) -> KeptPlans:
    """:func:`recallstore.consolidation.read_kept_plans`, blocking: the applied plans
    whose scope contains ``scope``, newest first, and the kept revisions that are none."""
    kept: KeptPlans = run_on(store, "read_kept_plans", _run.read_kept_plans, scope)
    return kept


def kept_plans(
    store: SyncMemoryStore, scope: Mapping[str, str] | None = None
) -> list[tuple[Plan, StoredRevision]]:
    """:func:`recallstore.consolidation.kept_plans`, blocking: the applied plans whose
    scope contains ``scope``, newest first, each with its revision."""
    plans: list[tuple[Plan, StoredRevision]] = run_on(store, "kept_plans", _run.kept_plans, scope)
    return plans
