"""``distil``, ``apply``, ``revert``: facts drawn from captured conversations, applied
and undone.

``distil`` only reads: it shows the distillers the valid captured records of one exact
scope and validates what they propose (:func:`~recallstore.consolidation.check_facts`).
``apply_distillation`` writes the plan's new facts in one ``store.write`` (all or
none), each carrying the plan in its payload and the conversations it rests on in its
``provenance`` and ``supports``; the records it corroborates get that evidence through
the store's ``"promote"`` extension, one ledger row each. ``revert_distillation``
invalidates, in one revision (the ``"revise"`` extension), every record the plan
added: nothing is deleted, and every other record is as it was.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from recallstore.capture import CAPTURE_TAG
from recallstore.consolidation.distil import (
    DISTILLED_TAG,
    Distillation,
    Distiller,
    PlannedFact,
    ProposedFact,
)
from recallstore.consolidation.plan import PlannedRecord
from recallstore.consolidation.run import _revising, scope_records
from recallstore.consolidation.validate import DEFAULT_FACT_CAP, check_facts
from recallstore.errors import (
    ConfigurationError,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from recallstore.jsonl import iter_records
from recallstore.records import MemoryRecord, MemoryWriteInput, Provenance
from recallstore.sameness import normal_form
from recallstore.store import (
    IDEMPOTENCY_EXTENSION,
    PROMOTE_EXTENSION,
    MemoryStore,
    RecordChange,
    StoredRevision,
    SupportsPromotion,
    utc_now,
)
from recallstore.values import canonical_scope

__all__ = [
    "AppliedDistillation",
    "KeptDistillation",
    "apply_distillation",
    "distil",
    "distillation_of",
    "kept_distillations",
    "revert_distillation",
]

_PAYLOAD_KEY: Final = "distilled"


async def distil(
    store: MemoryStore,
    scope: Mapping[str, str],
    distillers: Sequence[Distiller],
    *,
    cap: int = DEFAULT_FACT_CAP,
) -> Distillation:
    """A validated distillation plan for the captured records of exactly ``scope``;
    changes nothing. ``scope`` must be non-empty and ``distillers`` given (a model the
    host plugs in: nothing runs otherwise)."""
    pairs = canonical_scope(scope)
    if not pairs:
        raise MemoryValidationError("scope", "distillation needs a non-empty scope", {})
    if not distillers:
        raise MemoryValidationError("distillers", "distillation needs a distiller (a model)", [])
    if cap < 0:
        raise MemoryValidationError("cap", "must be >= 0", cap)
    valid = [r for r in await scope_records(store, pairs) if not r.is_invalidated]
    captured = {r.id: r for r in valid if CAPTURE_TAG in r.tags}
    existing = {normal_form(r.content): r for r in valid if r.id not in captured}
    proposed: list[tuple[str, ProposedFact]] = []
    shown = sorted(captured.values(), key=_conversation_order)
    for distiller in distillers:
        if shown:
            proposed.extend((distiller.name, fact) for fact in await distiller.distil(shown))
    facts, rejected = check_facts(proposed, captured, existing, scope=pairs, cap=cap)
    named = {c.record_id for f in facts for c in f.citations}
    named |= {f.corroborates for f in facts if f.corroborates is not None}
    by_id = {r.id: r for r in valid}
    created = utc_now()
    fingerprint = hashlib.sha256(
        "\n".join([repr(pairs), created.isoformat(), *map(repr, facts)]).encode()
    ).hexdigest()
    return Distillation(
        id="distil_" + fingerprint[:20],
        scope=pairs,
        created_at=created,
        proposers=tuple(d.name for d in distillers),
        facts=tuple(facts),
        quotes={i: PlannedRecord.of(by_id[i]) for i in sorted(named)},
        rejected=tuple(rejected),
    )


def _conversation_order(record: MemoryRecord) -> tuple[str, str, str]:
    conversation = record.provenance.conversation_id if record.provenance else None
    return (record.observed_at.isoformat(), conversation or "", record.id)


@dataclass(frozen=True)
class AppliedDistillation:
    """What :func:`apply_distillation` did: the records it added and corroborated."""

    plan: Distillation
    added: list[MemoryRecord]
    corroborated: list[MemoryRecord]


def _evidence(plan: Distillation, fact: PlannedFact, conversation: str | None) -> Provenance:
    return Provenance(
        conversation_id=conversation, run_id=plan.id, author=f"distil:{fact.proposer}"
    )


def _write_input(plan: Distillation, fact: PlannedFact, n: int, keyed: bool) -> MemoryWriteInput:
    conversations = fact.conversations or (None,)
    payload: dict[str, Any] = {
        _PAYLOAD_KEY: {
            "plan": plan.id,
            "proposer": fact.proposer,
            "reason": fact.reason,
            "cites": [c.model_dump(mode="json") for c in fact.citations],
        }
    }
    return MemoryWriteInput(
        scope=plan.scope,
        kind=fact.kind,
        content=fact.content,
        tags=(DISTILLED_TAG,),
        provenance=_evidence(plan, fact, conversations[0]),
        supports=tuple(_evidence(plan, fact, c) for c in conversations),
        payload=payload,
        idempotency_key=f"distil/{plan.id}/{n}" if keyed else None,
    )


async def apply_distillation(store: MemoryStore, plan: Distillation) -> AppliedDistillation:
    """Write ``plan``'s new facts in one transaction, then add the evidence of its
    corroborations. Raises :class:`~recallstore.errors.MemoryConflictError` (nothing
    changed) when a record it cites or corroborates is no longer valid. Applying the
    same plan again adds nothing on a store with idempotency keys."""
    _revising(store)  # a plan it could not revert is not applied
    promoting = _promoting(store, plan)
    for record_id in plan.quotes:
        found = await store.get(record_id)
        if found is None or found.is_invalidated or found.scope != plan.scope:
            raise MemoryConflictError(
                record_id, f"distillation {plan.id} rests on it, and it is no longer valid"
            )
    keyed = IDEMPOTENCY_EXTENSION in store.capabilities().extensions
    inputs = [_write_input(plan, fact, n, keyed) for n, fact in enumerate(plan.added)]
    added = await store.write(inputs) if inputs else []
    corroborated = []
    if promoting is not None:
        corroborated = [await _corroborate(promoting, plan, f) for f in plan.corroborations]
    return AppliedDistillation(plan, added, [r for r in corroborated if r is not None])


async def _corroborate(
    store: SupportsPromotion, plan: Distillation, fact: PlannedFact
) -> MemoryRecord | None:
    """Add the fact's conversations to the evidence of the record it corroborates,
    one ``corroborate`` ledger row per conversation it did not have yet."""
    assert fact.corroborates is not None
    record = None
    for conversation in fact.conversations or (None,):
        record = await store.corroborate(
            plan.scope,
            fact.corroborates,
            _evidence(plan, fact, conversation),
            actor=f"distillation {plan.id}",
            reason=fact.reason,
        )
    return record


def _promoting(store: MemoryStore, plan: Distillation) -> SupportsPromotion | None:
    if not plan.corroborations:
        return None
    if PROMOTE_EXTENSION not in store.capabilities().extensions or not isinstance(
        store, SupportsPromotion
    ):
        raise ConfigurationError(
            f"{type(store).__name__} lacks the {PROMOTE_EXTENSION!r} extension, so it cannot "
            f"add the evidence of distillation {plan.id}'s {len(plan.corroborations)} "
            "corroboration(s); nothing changed"
        )
    return store


@dataclass(frozen=True)
class KeptDistillation:
    """An applied distillation as the store holds it: the records it wrote."""

    plan_id: str
    scope: dict[str, str]
    records: tuple[MemoryRecord, ...]

    @property
    def reverted(self) -> bool:
        """True when none of its records is valid any more."""
        return all(r.is_invalidated for r in self.records)


async def _corroborated_only(
    store: MemoryStore, plan_id: str, scope: Mapping[str, str] | None
) -> bool:
    """Whether distillation ``plan_id`` left ledger rows (corroborations) in ``scope``."""
    if PROMOTE_EXTENSION not in store.capabilities().extensions or not isinstance(
        store, SupportsPromotion
    ):
        return False
    rows = await store.ledger(canonical_scope(scope or {}))
    return any(row.actor == f"distillation {plan_id}" for row in rows)


def distillation_of(record: MemoryRecord) -> str | None:
    """The id of the distillation that wrote ``record``, or None."""
    payload = record.payload
    if DISTILLED_TAG not in record.tags or not isinstance(payload, dict):
        return None
    body = payload.get(_PAYLOAD_KEY)
    plan = body.get("plan") if isinstance(body, dict) else None
    return plan if isinstance(plan, str) else None


async def kept_distillations(
    store: MemoryStore, scope: Mapping[str, str] | None = None
) -> list[KeptDistillation]:
    """Applied distillations whose records lie within ``scope``, newest first."""
    found: dict[str, list[MemoryRecord]] = {}
    async for record in iter_records(store, canonical_scope(scope or {})):
        plan = distillation_of(record)
        if plan is not None:
            found.setdefault(plan, []).append(record)
    kept = [KeptDistillation(p, dict(rs[0].scope), tuple(rs)) for p, rs in found.items()]
    return sorted(kept, key=lambda k: (k.records[0].created_at, k.plan_id), reverse=True)


async def revert_distillation(
    store: MemoryStore, plan_id: str, scope: Mapping[str, str] | None = None
) -> StoredRevision:
    """Invalidate, in one revision, every still-valid record distillation ``plan_id``
    wrote (searched within ``scope``, default everywhere); the revision kept.

    Not found when no record of it is stored; a conflict when none is valid (reverted
    already). The evidence it added to records it corroborated stays: the ledger only
    grows (see docs/learning.md)."""
    if not isinstance(plan_id, str) or not plan_id.strip():
        raise MemoryValidationError("plan_id", "must be a distillation's id", plan_id)
    revising = _revising(store)
    kept = [k for k in await kept_distillations(store, scope) if k.plan_id == plan_id]
    if not kept:
        if await _corroborated_only(store, plan_id, scope):
            raise MemoryConflictError(
                plan_id,
                "it wrote no record, only evidence for records that already said its facts; "
                "evidence stays in the ledger (demote takes a promotion back)",
            )
        raise MemoryNotFoundError(plan_id)
    valid = [r for r in kept[0].records if not r.is_invalidated]
    if not valid:
        raise MemoryConflictError(plan_id, "every record it wrote is invalid: reverted already")
    reason = f"distillation {plan_id} reverted"
    body = json.dumps({"distillation_reverted": plan_id, "records": [r.id for r in valid]})
    stamp = hashlib.sha256(f"{plan_id}\n{utc_now().isoformat()}".encode()).hexdigest()[:12]
    return await revising.revise(
        f"revert_{plan_id}_{stamp}",
        kept[0].scope,
        [RecordChange(id=r.id, reason=reason) for r in valid],
        body,
        redacted_body=body,
    )
