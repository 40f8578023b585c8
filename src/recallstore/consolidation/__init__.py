"""Consolidation: duplicates and contradictions as a reviewable, revertible plan.

``consolidate(store, scope)`` reads one exact scope and returns a :class:`Plan` of
``supersede``/``duplicate``/``noop`` operations (never a delete), each validated;
``apply_plan`` applies it atomically through the store's ``"revise"`` extension and
keeps it; ``revert_plan`` restores what it changed. One module a topic: ``plan`` (the
model and its diff), ``proposers`` (the protocol and the deterministic defaults),
``validate`` (the checks), ``run`` (consolidate, apply, revert). See
docs/consolidation.md.

Distillation uses the same machinery to add what consolidation never does: facts a
model the host plugs in draws from captured conversations, each citing the turns it
rests on, validated, shown as a diff, applied at once and reverted (``distil``, the
model and its diff; ``distil_run``, distil/apply/revert). See docs/learning.md.
"""

from recallstore.consolidation.distil import (
    DISTILLED_TAG,
    Citation,
    Distillation,
    Distiller,
    FactKind,
    FactRejection,
    PlannedFact,
    ProposedFact,
    UnusableFact,
)
from recallstore.consolidation.distil_run import (
    AppliedDistillation,
    KeptDistillation,
    RevertedDistillation,
    apply_distillation,
    distil,
    distillation_of,
    kept_distillations,
    revert_distillation,
)
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
from recallstore.consolidation.validate import (
    DEFAULT_CAP,
    DEFAULT_FACT_CAP,
    check_facts,
    check_proposals,
)

__all__ = [
    "DEFAULT_CAP",
    "DEFAULT_FACT_CAP",
    "DEFAULT_PROPOSERS",
    "DISTILLED_TAG",
    "WITHHELD",
    "Action",
    "AppliedDistillation",
    "Citation",
    "Distillation",
    "Distiller",
    "ExactDuplicates",
    "FactKind",
    "FactRejection",
    "KeptDistillation",
    "KeptPlans",
    "NearDuplicates",
    "Operation",
    "Plan",
    "PlannedFact",
    "PlannedRecord",
    "ProposedFact",
    "Proposer",
    "Rejection",
    "RevertedDistillation",
    "SlotMatch",
    "UnusableFact",
    "UnusableProposal",
    "apply_distillation",
    "apply_plan",
    "check_facts",
    "check_proposals",
    "consolidate",
    "distil",
    "distillation_of",
    "kept_distillations",
    "kept_plans",
    "plan_of",
    "read_kept_plans",
    "revert_distillation",
    "revert_plan",
    "scope_records",
]
