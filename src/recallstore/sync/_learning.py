"""Memory that learns (:mod:`recallstore.learning`, distillation in
:mod:`recallstore.consolidation`) as blocking calls on a
:class:`~recallstore.sync.SyncMemoryStore`: the learned overlay, and distil, apply,
list and revert a distillation. Same names, parameters and semantics as the async
functions, with a ``SyncMemoryStore`` where they take a store; distillers stay async
(they run on the store's loop)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from recallstore.consolidation import distil_run as _distil
from recallstore.consolidation.distil import Distillation, Distiller
from recallstore.consolidation.distil_run import (
    AppliedDistillation,
    KeptDistillation,
    RevertedDistillation,
)
from recallstore.consolidation.validate import DEFAULT_FACT_CAP
from recallstore.learning import DEFAULT_LEARNED_BUDGET_CHARS, Learned
from recallstore.learning import assemble_learned as _assemble_learned
from recallstore.sync._calls import run_on
from recallstore.sync._store import SyncMemoryStore

__all__ = [
    "apply_distillation",
    "assemble_learned",
    "distil",
    "kept_distillations",
    "revert_distillation",
]


def assemble_learned(
    store: SyncMemoryStore,
    scope: Mapping[str, str],
    *,
    budget_chars: int = DEFAULT_LEARNED_BUDGET_CHARS,
    now: datetime | None = None,
) -> Learned:
    """:func:`recallstore.assemble_learned`, blocking: the promoted records of exactly
    ``scope`` as the learned lines of the system prompt, within ``budget_chars``."""
    learned: Learned = run_on(
        store, "assemble_learned", _assemble_learned, scope, budget_chars=budget_chars, now=now
    )
    return learned


def distil(
    store: SyncMemoryStore,
    scope: Mapping[str, str],
    distillers: Sequence[Distiller],
    *,
    cap: int = DEFAULT_FACT_CAP,
) -> Distillation:
    """:func:`recallstore.consolidation.distil`, blocking: the facts ``distillers``
    propose from the captured conversations of exactly ``scope``, validated; changes
    nothing."""
    plan: Distillation = run_on(store, "distil", _distil.distil, scope, distillers, cap=cap)
    return plan


def apply_distillation(store: SyncMemoryStore, plan: Distillation) -> AppliedDistillation:
    """:func:`recallstore.consolidation.apply_distillation`, blocking: the plan's new
    facts written and its corroborations added."""
    applied: AppliedDistillation = run_on(
        store, "apply_distillation", _distil.apply_distillation, plan
    )
    return applied


def kept_distillations(
    store: SyncMemoryStore, scope: Mapping[str, str] | None = None
) -> list[KeptDistillation]:
    """:func:`recallstore.consolidation.kept_distillations`, blocking: the applied
    distillations whose scope contains ``scope``."""
    kept: list[KeptDistillation] = run_on(
        store, "kept_distillations", _distil.kept_distillations, scope
    )
    return kept


def revert_distillation(
    store: SyncMemoryStore, plan_id: str, scope: Mapping[str, str] | None = None
) -> RevertedDistillation:
    """:func:`recallstore.consolidation.revert_distillation`, blocking: every
    corroboration distillation ``plan_id`` made withdrawn, every record it wrote
    invalidated in one revision (nothing deleted)."""
    reverted: RevertedDistillation = run_on(
        store, "revert_distillation", _distil.revert_distillation, plan_id, scope
    )
    return reverted
