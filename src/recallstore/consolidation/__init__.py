"""Consolidation: duplicates and contradictions as a reviewable, revertible plan.

``consolidate(store, scope)`` reads one exact scope and returns a :class:`Plan` of
``supersede``/``duplicate``/``noop`` operations (never a delete), each validated;
``apply_plan`` applies it atomically through the store's ``"revise"`` extension and
keeps it; ``revert_plan`` restores what it changed. One module a topic: ``plan`` (the
model and its diff), ``proposers`` (the protocol and the deterministic defaults),
``validate`` (the checks), ``run`` (consolidate, apply, revert). See
docs/consolidation.md.
"""

from recallstore.consolidation.plan import (
    WITHHELD,
    Action,
    Operation,
    Plan,
    PlannedRecord,
    Rejection,
)
from recallstore.consolidation.proposers import (
    DEFAULT_PROPOSERS,
    ExactDuplicates,
    NearDuplicates,
    Proposer,
    SlotMatch,
    UnusableProposal,
)
from recallstore.consolidation.run import (
    KeptPlans,
    apply_plan,
    consolidate,
    kept_plans,
    plan_of,
    read_kept_plans,
    revert_plan,
    scope_records,
)
from recallstore.consolidation.validate import DEFAULT_CAP, check_proposals

__all__ = [
    "DEFAULT_CAP",
    "DEFAULT_PROPOSERS",
    "WITHHELD",
    "Action",
    "ExactDuplicates",
    "KeptPlans",
    "NearDuplicates",
    "Operation",
    "Plan",
    "PlannedRecord",
    "Proposer",
    "Rejection",
    "SlotMatch",
    "UnusableProposal",
    "apply_plan",
    "check_proposals",
    "consolidate",
    "kept_plans",
    "plan_of",
    "read_kept_plans",
    "revert_plan",
    "scope_records",
]
