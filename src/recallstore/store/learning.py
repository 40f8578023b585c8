"""The ``"promote"`` extension: memory that learns under the host's control (issue 39).

A record is a note until the host promotes it. Three calls change what the store
learned, each atomic, scoped to exactly one record's scope, journaled, and kept as one
row of the **evolution ledger** (who or what, when, why, the evidence):

* :meth:`SupportsPromotion.corroborate` adds one piece of evidence (a
  :class:`~recallstore.records.Provenance`: the conversation, run and author that said
  the same thing again) to the record's ``supports`` instead of a second copy. The
  record's own provenance is listed first, so ``supports`` is every piece of evidence
  (:func:`evidence_of`); :func:`conversations_of` names the distinct conversations.
* :meth:`SupportsPromotion.promote` makes the record a standing instruction of a typed
  target (:data:`PROMOTION_KINDS`: a background entry, a judgment heuristic, an
  example, an awareness domain) — only through a :class:`PromotionGate`, the host's
  policy, which the store evaluates on the record inside the same transaction; a
  refusal raises :class:`PromotionRefusedError` and changes nothing.
* :meth:`SupportsPromotion.demote` takes it back; the prompt is then what it was.
* :meth:`SupportsPromotion.withdraw` takes one piece of evidence back out of
  ``supports`` (a reverted distillation's corroborations): the exact inverse of the
  corroborate that added it. :meth:`SupportsPromotion.corroborate_all` and
  :meth:`SupportsPromotion.withdraw_all` do several (:class:`Corroboration`) in one
  transaction, all or none.

What is promoted derives from the ledger (:func:`promotions_from`): the latest
promote or demote row of each record. No model tool calls any of these (a model may
*propose* a lesson by saving it; it can never promote one). ``delete(id)`` and
``forget(scope)`` erase the ledger rows of what they delete (kit S24); the kit rules
are S25–S28 (``recallstore.testing.learning``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Literal, Protocol, get_args, runtime_checkable

from recallstore.errors import MemoryConflictError, MemoryValidationError
from recallstore.records import MemoryRecord, MemoryTarget, Provenance, format_timestamp
from recallstore.values import MAX_ID_CHARS, MAX_REASON_CHARS, check_text, utc_moment

__all__ = [
    "LEARN_EVENT_TYPE",
    "MAX_SUPPORTS",
    "PROMOTE_EXTENSION",
    "PROMOTION_KINDS",
    "Corroboration",
    "GateDecision",
    "LedgerAction",
    "LedgerEntry",
    "Promotion",
    "PromotionGate",
    "PromotionKind",
    "PromotionRefusedError",
    "SupportsPromotion",
    "check_actor",
    "check_ledger_reason",
    "check_promotion_target",
    "conversations_of",
    "evidence_of",
    "ledger_entry_from_row",
    "ledger_entry_row",
    "promotions_from",
    "scope_text",
]

PROMOTE_EXTENSION: Final = "promote"
"""``capabilities().extensions`` name of stores with ``corroborate``/``promote``/
``demote``/``withdraw``/``promotions``/``ledger`` (:class:`SupportsPromotion`)."""

LEARN_EVENT_TYPE: Final = "agent.memory.learn"
"""The journal and event type of one ledger row (a corroborate, promote, demote or
withdraw)."""

PromotionKind = Literal["background", "heuristic", "example", "awareness"]
"""The design's four targets a promoted record may become: a background entry, a
judgment heuristic, an example, an awareness domain (``MemoryTarget.section``)."""
PROMOTION_KINDS: Final[tuple[PromotionKind, ...]] = get_args(PromotionKind)

LedgerAction = Literal["corroborate", "promote", "demote", "withdraw"]
"""What one ledger row records."""

MAX_SUPPORTS: Final = 256
"""The most pieces of evidence one record keeps; a corroboration beyond is refused."""

_MAX_ACTOR_CHARS: Final = MAX_ID_CHARS * 2


class PromotionRefusedError(MemoryConflictError):
    """The gate refused a promotion; nothing changed. ``decision`` says why."""

    def __init__(self, record_id: str, decision: GateDecision) -> None:
        self.decision = decision
        super().__init__(record_id, "the gate refused it: " + "; ".join(decision.refusals))


def check_actor(value: object, name: str = "actor") -> str:
    """``value`` when it can name who or what acted; else :class:`MemoryValidationError`."""
    if not isinstance(value, str) or not value.strip():
        raise MemoryValidationError(name, "must be a non-empty string naming who acted", value)
    try:
        return check_text(value.strip(), name, _MAX_ACTOR_CHARS)
    except ValueError as exc:
        raise MemoryValidationError(name, str(exc), value) from None


def check_ledger_reason(value: object) -> str:
    """``value`` when it can be a ledger row's reason (non-empty, at most
    :data:`~recallstore.values.MAX_REASON_CHARS`); else :class:`MemoryValidationError`."""
    if not isinstance(value, str) or not value.strip():
        raise MemoryValidationError("reason", "must be a non-empty string saying why", value)
    try:
        return check_text(value.strip(), "reason", MAX_REASON_CHARS)
    except ValueError as exc:
        raise MemoryValidationError("reason", str(exc), value) from None


def check_promotion_target(target: object) -> MemoryTarget:
    """``target`` when it is a :class:`MemoryTarget` whose section is one of
    :data:`PROMOTION_KINDS`; else :class:`MemoryValidationError` on ``target``."""
    if not isinstance(target, MemoryTarget):
        raise MemoryValidationError("target", "must be a MemoryTarget", target)
    if target.section not in PROMOTION_KINDS:
        raise MemoryValidationError(
            "target.section",
            f"{target.section!r} is not a promotion target; one of {list(PROMOTION_KINDS)}",
            target.section,
        )
    return target


def evidence_of(record: MemoryRecord) -> tuple[Provenance, ...]:
    """Every distinct piece of evidence behind ``record``: its provenance, then its
    supports (empty provenances left out)."""
    found = [p for p in (record.provenance, *record.supports) if p is not None]
    return tuple(p for p in dict.fromkeys(found) if p != Provenance())


def conversations_of(record: MemoryRecord) -> tuple[str, ...]:
    """The distinct conversation ids behind ``record``, in the order they arrived."""
    ids = (p.conversation_id for p in evidence_of(record))
    return tuple(dict.fromkeys(i for i in ids if i))


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One row of the evolution ledger: a corroboration, a promotion, a demotion or a
    withdrawal."""

    id: str
    scope: dict[str, str]
    """The record's scope (exactly)."""
    record_id: str
    action: LedgerAction
    at: datetime
    """When, by the store's clock."""
    actor: str
    """Who or what acted: a host component, a person (``"person:ana"``), a distiller."""
    reason: str
    """Why, in the actor's words."""
    evidence: tuple[Provenance, ...] = ()
    """Corroborate: the new evidence. Withdraw: the evidence taken back. Promote: every
    piece of evidence the gate saw. Demote: none."""
    target: MemoryTarget | None = None
    """Promote and demote: the target."""
    approved_by: str | None = None
    """Promote: the person who approved it, when the gate asked for one."""
    supports_before: tuple[Provenance, ...] | None = None
    """Corroborate and withdraw: the record's ``supports`` just before the change (what
    lets a withdrawal restore them exactly); None on other rows."""

    @property
    def conversations(self) -> tuple[str, ...]:
        """The distinct conversation ids of :attr:`evidence`."""
        ids = (p.conversation_id for p in self.evidence)
        return tuple(dict.fromkeys(i for i in ids if i))


@dataclass(frozen=True, slots=True)
class Promotion:
    """A record standing as an instruction: its target and the promote row behind it."""

    record_id: str
    scope: dict[str, str]
    target: MemoryTarget
    promoted_at: datetime
    actor: str
    reason: str
    ledger_id: str
    evidence: tuple[Provenance, ...] = ()
    approved_by: str | None = None


def promotions_from(entries: Iterable[LedgerEntry]) -> list[Promotion]:
    """The promotions a ledger holds: each record whose latest promote or demote row
    (in the given order, oldest first) is a promote; ordered by promotion time, id."""
    latest: dict[str, LedgerEntry] = {}
    for entry in entries:
        if entry.action in ("promote", "demote"):
            latest[entry.record_id] = entry
    found = [
        Promotion(
            record_id=e.record_id,
            scope=dict(e.scope),
            target=e.target,
            promoted_at=e.at,
            actor=e.actor,
            reason=e.reason,
            ledger_id=e.id,
            evidence=e.evidence,
            approved_by=e.approved_by,
        )
        for e in latest.values()
        if e.action == "promote" and e.target is not None
    ]
    return sorted(found, key=lambda p: (p.promoted_at, p.record_id))


@dataclass(frozen=True, slots=True)
class GateDecision:
    """What a :class:`PromotionGate` made of one record: allowed, or why not."""

    allowed: bool
    refusals: tuple[str, ...]
    evidence: tuple[Provenance, ...]
    conversations: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PromotionGate:
    """The host's policy for promotion: what a record must show to become an instruction.

    A record passes when it is valid (not invalidated, superseded — contradicted — or
    expired), has at least ``min_supports`` pieces of evidence (:func:`evidence_of`)
    from at least ``min_conversations`` distinct conversations, has stood valid for at
    least ``min_age`` since it was saved, is of one of ``kinds`` (None: any), and — for
    a target whose kind is in ``approval_for`` — comes with a person's approval. By
    default every target needs one: an instruction learned from what users typed is
    the way prompt injection through memory would go (docs/learning.md).
    """

    min_supports: int = 3
    min_conversations: int = 3
    min_age: timedelta = timedelta(0)
    approval_for: frozenset[str] = field(default_factory=lambda: frozenset(PROMOTION_KINDS))
    kinds: frozenset[str] | None = None

    def __post_init__(self) -> None:
        for name in ("min_supports", "min_conversations"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise MemoryValidationError(
                    name,
                    "a gate asks for at least one piece of evidence from one conversation",
                    value,
                )
        if self.min_age < timedelta(0):
            raise MemoryValidationError("min_age", "must not be negative", self.min_age)
        unknown = sorted(set(self.approval_for) - set(PROMOTION_KINDS))
        if unknown:
            raise MemoryValidationError(
                "approval_for", f"unknown promotion targets {unknown}", unknown
            )

    def evaluate(
        self,
        record: MemoryRecord,
        target: MemoryTarget,
        now: datetime,
        approved_by: str | None = None,
    ) -> GateDecision:
        """Whether ``record`` may become ``target`` at ``now`` (pure: no I/O)."""
        evidence = evidence_of(record)
        conversations = conversations_of(record)
        refusals: list[str] = []
        status = record.status(now)
        if status != "valid":
            refusals.append(f"the record is {status}")
        if len(evidence) < self.min_supports:
            refusals.append(
                f"{len(evidence)} piece(s) of evidence; the gate asks for {self.min_supports}"
            )
        if len(conversations) < self.min_conversations:
            refusals.append(
                f"{len(conversations)} distinct conversation(s); the gate asks for "
                f"{self.min_conversations}"
            )
        if now - record.created_at < self.min_age:
            refusals.append(f"saved {format_timestamp(record.created_at)}: not old enough")
        if self.kinds is not None and record.kind not in self.kinds:
            refusals.append(f"a {record.kind} record is not promoted by this gate")
        if target.section in self.approval_for and not approved_by:
            refusals.append(f"a {target.section} target needs a person's approval")
        return GateDecision(not refusals, tuple(refusals), evidence, conversations)


@dataclass(frozen=True, slots=True)
class Corroboration:
    """One piece of evidence for one record, as :meth:`SupportsPromotion.corroborate_all`
    adds it and :meth:`SupportsPromotion.withdraw_all` takes it back."""

    record_id: str
    evidence: Provenance
    reason: str
    """Why, in the actor's words: the ledger row's reason."""


@runtime_checkable
class SupportsPromotion(Protocol):
    """A store with the ``"promote"`` extension (see the module)."""

    async def corroborate(
        self,
        scope: Mapping[str, str],
        id: str,
        evidence: Provenance,
        *,
        actor: str,
        reason: str,
    ) -> MemoryRecord:
        """Add ``evidence`` to the valid record ``id`` of exactly ``scope`` (S25): its
        provenance first when ``supports`` was empty, then the new evidence; one
        ``corroborate`` ledger row. Evidence already listed changes nothing (no row).
        Missing or out of scope -> MemoryNotFoundError; invalid, expired or full
        (:data:`MAX_SUPPORTS`) -> MemoryConflictError."""
        ...

    async def corroborate_all(
        self, scope: Mapping[str, str], items: Sequence[Corroboration], *, actor: str
    ) -> list[MemoryRecord]:
        """``corroborate`` each of ``items`` (in order, records of exactly ``scope``) in
        one transaction: every row or none (S28). Returns each item's record as it
        stood after it."""
        ...

    async def withdraw(
        self,
        scope: Mapping[str, str],
        id: str,
        evidence: Provenance,
        *,
        actor: str,
        reason: str,
    ) -> MemoryRecord:
        """Take ``evidence`` out of the ``supports`` of the record ``id`` of exactly
        ``scope`` (S28), whatever the record's status; one ``withdraw`` ledger row. When
        nothing else changed the supports since the corroborate that added it, they are
        restored exactly as they were before it (that corroborate's
        :attr:`LedgerEntry.supports_before`). Missing or out of scope ->
        MemoryNotFoundError; evidence not among its supports -> MemoryConflictError."""
        ...

    async def withdraw_all(
        self, scope: Mapping[str, str], items: Sequence[Corroboration], *, actor: str
    ) -> list[MemoryRecord]:
        """``withdraw`` each of ``items`` in order in one transaction: every row or none
        (S28). Undo a ``corroborate_all`` by passing its items reversed."""
        ...

    async def promote(
        self,
        scope: Mapping[str, str],
        id: str,
        target: MemoryTarget,
        *,
        gate: PromotionGate,
        actor: str,
        reason: str,
        approved_by: str | None = None,
    ) -> Promotion:
        """Promote the record ``id`` of exactly ``scope`` to ``target`` when ``gate``
        allows it, judged in the same transaction (S26); one ``promote`` ledger row.
        Refused -> PromotionRefusedError; promoted already -> MemoryConflictError."""
        ...

    async def demote(
        self, scope: Mapping[str, str], id: str, *, actor: str, reason: str
    ) -> LedgerEntry:
        """Take the promotion of ``id`` back (S26); one ``demote`` ledger row. Not
        promoted -> MemoryConflictError."""
        ...

    async def promotions(self, scope: Mapping[str, str]) -> list[Promotion]:
        """The promotions of exactly ``scope``, oldest first."""
        ...

    async def ledger(
        self, scope: Mapping[str, str] | None = None, *, record_id: str | None = None
    ) -> list[LedgerEntry]:
        """Ledger rows whose scope contains ``scope`` (of ``record_id`` only, when
        given), oldest first (S27)."""
        ...


# --- the ledger as rows of text columns (the SQL backends) ----------------------------

LedgerRow = tuple[str, str, str, str, str]
"""``(id, record_id, scope JSON, at, body JSON)``."""


def scope_text(scope: Mapping[str, str]) -> str:
    """A canonical scope as the ledger's ``scope`` column holds it (one text per scope)."""
    return json.dumps(dict(scope), sort_keys=True, ensure_ascii=False)


def ledger_entry_row(entry: LedgerEntry) -> LedgerRow:
    """``entry`` as a row of text columns."""
    body: dict[str, Any] = {
        "action": entry.action,
        "actor": entry.actor,
        "reason": entry.reason,
        "evidence": [p.model_dump(mode="json") for p in entry.evidence],
        "target": None if entry.target is None else entry.target.model_dump(mode="json"),
        "approved_by": entry.approved_by,
    }
    if entry.supports_before is not None:
        body["supports_before"] = [p.model_dump(mode="json") for p in entry.supports_before]
    return (
        entry.id,
        entry.record_id,
        scope_text(entry.scope),
        format_timestamp(entry.at),
        json.dumps(body, ensure_ascii=False),
    )


def ledger_entry_from_row(row: Sequence[Any]) -> LedgerEntry:
    """The entry a :func:`ledger_entry_row` row holds."""
    body = json.loads(row[4])
    at = utc_moment(datetime.fromisoformat(row[3]))
    assert at is not None
    target = body.get("target")
    before = body.get("supports_before")
    return LedgerEntry(
        id=row[0],
        record_id=row[1],
        scope=json.loads(row[2]),
        at=at,
        action=body["action"],
        actor=body["actor"],
        reason=body["reason"],
        evidence=tuple(Provenance.model_validate(p) for p in body.get("evidence", ())),
        target=None if target is None else MemoryTarget.model_validate(target),
        approved_by=body.get("approved_by"),
        supports_before=None
        if before is None
        else tuple(Provenance.model_validate(p) for p in before),
    )
