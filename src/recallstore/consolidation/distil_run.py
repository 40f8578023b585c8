"""``distil``, ``apply``, ``revert``: facts drawn from captured conversations, applied
and undone.

``distil`` only reads: it shows the distillers the valid captured records of one exact
scope and validates what they propose (:func:`~recallstore.consolidation.check_facts`).

``apply_distillation`` makes two atomic steps, ordered so that a failure leaves
nothing behind: first the evidence of every corroboration, in one transaction of the
store's ``"promote"`` extension (``corroborate_all``: one ledger row per new piece of
evidence, actor ``"distillation <id>"``); then the plan's new facts in one
``store.write`` (all or none), each carrying the plan in its payload and the
conversations it rests on in its ``provenance`` and ``supports``. When the write
fails, the corroborations are withdrawn again (``withdraw_all``, one transaction) and
the error raised: the records' ``supports`` are as before, the ledger keeps the
corroborate and withdraw rows. ``revert_distillation`` withdraws every corroboration
of the plan still standing (one transaction) and invalidates, in one revision (the
``"revise"`` extension), every record the plan added: nothing is deleted, and every
other record's ``supports`` are exactly as before the apply (its ``updated_at`` moves
on). A revert stopped between its two steps finishes when run again.
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
    Corroboration,
    MemoryStore,
    RecordChange,
    StoredRevision,
    SupportsPromotion,
    utc_now,
)
from recallstore.store.learning import scope_text
from recallstore.values import canonical_scope

__all__ = [
    "AppliedDistillation",
    "KeptDistillation",
    "RevertedDistillation",
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
    """Add the evidence of ``plan``'s corroborations in one transaction, then write its
    new facts in another; when the write fails the evidence is withdrawn again, so the
    store is as before (see the module). Raises
    :class:`~recallstore.errors.MemoryConflictError` (nothing changed) when a record it
    cites or corroborates is no longer valid. Applying the same plan again adds nothing
    on a store with idempotency keys."""
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
    corroborated: list[MemoryRecord] = []
    if promoting is not None:
        earlier = set(await _standing(promoting, plan.id, plan.scope))
        items = [
            Corroboration(fact.corroborates, _evidence(plan, fact, conversation), fact.reason)
            for fact in plan.corroborations
            if fact.corroborates is not None
            for conversation in fact.conversations or (None,)
        ]
        done = await promoting.corroborate_all(plan.scope, items, actor=_actor(plan.id))
        corroborated = list({r.id: r for r in done}.values())
    try:
        added = await store.write(inputs) if inputs else []
    except Exception:
        if promoting is not None:
            now = await _standing(promoting, plan.id, plan.scope)
            undo = [item for text, item in now if (text, item) not in earlier]
            if undo:
                await promoting.withdraw_all(plan.scope, undo[::-1], actor=_actor(plan.id))
        raise
    return AppliedDistillation(plan, added, corroborated)


def _actor(plan_id: str) -> str:
    return f"distillation {plan_id}"


async def _standing(
    store: SupportsPromotion, plan_id: str, scope: Mapping[str, str] | None
) -> list[tuple[str, Corroboration]]:
    """The corroborations distillation ``plan_id`` made within ``scope`` that nobody
    withdrew since, oldest first (from the ledger), each with its record's scope (as
    :func:`~recallstore.store.learning.scope_text`)."""
    standing: dict[tuple[str, Provenance], tuple[str, Corroboration]] = {}
    for row in await store.ledger(canonical_scope(scope or {})):
        if row.actor != _actor(plan_id) or len(row.evidence) != 1:
            continue
        key = (row.record_id, row.evidence[0])
        if row.action == "corroborate":
            item = Corroboration(row.record_id, row.evidence[0], row.reason)
            standing[key] = (scope_text(row.scope), item)
        elif row.action == "withdraw":
            standing.pop(key, None)
    return list(standing.values())


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


@dataclass(frozen=True)
class RevertedDistillation:
    """What :func:`revert_distillation` did."""

    plan_id: str
    revision: StoredRevision | None
    """The revision that invalidated the records the plan wrote (None: it wrote none
    still valid)."""
    withdrawn: list[Corroboration]
    """The corroborations taken back, in the order withdrawn (newest first)."""


async def revert_distillation(
    store: MemoryStore, plan_id: str, scope: Mapping[str, str] | None = None
) -> RevertedDistillation:
    """Undo distillation ``plan_id`` (searched within ``scope``, default everywhere):
    withdraw every corroboration it made that still stands, in one transaction, then
    invalidate every still-valid record it wrote, in one revision. Afterwards every
    record it did not write has the ``supports`` it had before the apply.

    Not found when the store holds no record and no ledger row of it; a conflict when
    nothing of it is left to undo (reverted already)."""
    if not isinstance(plan_id, str) or not plan_id.strip():
        raise MemoryValidationError("plan_id", "must be a distillation's id", plan_id)
    revising = _revising(store)
    kept = [k for k in await kept_distillations(store, scope) if k.plan_id == plan_id]
    learning = _learning(store)
    standing = [] if learning is None else await _standing(learning, plan_id, scope)
    if not kept and not standing:
        rows = [] if learning is None else await learning.ledger(canonical_scope(scope or {}))
        if not any(row.actor == _actor(plan_id) for row in rows):
            raise MemoryNotFoundError(plan_id)
    valid = [r for r in kept[0].records if not r.is_invalidated] if kept else []
    if not valid and not standing:
        raise MemoryConflictError(plan_id, "nothing of it is left to undo: reverted already")
    by_scope: dict[str, list[Corroboration]] = {}
    for text, item in reversed(standing):
        by_scope.setdefault(text, []).append(item)
    for text, items in by_scope.items():
        assert learning is not None
        await learning.withdraw_all(json.loads(text), items, actor=_actor(plan_id))
    withdrawn = [item for _, item in reversed(standing)]
    if not valid:
        return RevertedDistillation(plan_id, None, withdrawn)
    reason = f"distillation {plan_id} reverted"
    body = json.dumps({"distillation_reverted": plan_id, "records": [r.id for r in valid]})
    stamp = hashlib.sha256(f"{plan_id}\n{utc_now().isoformat()}".encode()).hexdigest()[:12]
    revision = await revising.revise(
        f"revert_{plan_id}_{stamp}",
        kept[0].scope,
        [RecordChange(id=r.id, reason=reason) for r in valid],
        body,
        redacted_body=body,
    )
    return RevertedDistillation(plan_id, revision, withdrawn)


def _learning(store: MemoryStore) -> SupportsPromotion | None:
    if PROMOTE_EXTENSION in store.capabilities().extensions and isinstance(
        store, SupportsPromotion
    ):
        return store
    return None
