"""``agent.memory.learn`` and ``agent.memory.learned``: memory that learns (issue 39).

``agent.memory.learn`` is one row of the evolution ledger — a corroborate, promote or
demote — emitted inside the span of that store call (``update_memory``) by
``ObservedMemoryStore`` and journaled by a store that keeps the journal.
``agent.memory.learned`` is one rendering of the learned sections into a prompt
(``assemble_learned``, inside ``MemoryCapability.instantiate``): which promoted
records became which lines. Like every event they carry ids, kinds and counts, never
the lesson's text nor the evidence's conversation ids. ``lens.js`` renders both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import Field

from recallstore.events._event_type import (
    GEN_AI_MEMORY_RECORD_COUNT,
    GEN_AI_MEMORY_RECORD_ID,
    EventType,
    OtelAttribute,
    StoreCall,
)
from recallstore.events.models import EventData, MemoryEvent
from recallstore.records import MemoryRecord
from recallstore.store import LEARN_EVENT_TYPE, LedgerEntry, Promotion, evidence_of

if TYPE_CHECKING:
    from recallstore.learning import Learned

__all__ = [
    "LEARNED_EVENT",
    "LEARNED_EVENT_TYPE",
    "LEARN_EVENT",
    "LEARN_EVENT_TYPE",
    "MemoryLearnData",
    "MemoryLearnEvent",
    "MemoryLearnedData",
    "MemoryLearnedEvent",
    "learned_data",
]

LEARNED_EVENT_TYPE: Final = "agent.memory.learned"

_RecordIds = tuple[str, ...]


class MemoryLearnData(EventData):
    """One row of the evolution ledger: a corroboration, a promotion, a demotion or a
    withdrawal."""

    action: Literal["corroborate", "promote", "demote", "withdraw"]
    """What the row records."""
    ok: bool = True
    """False when the store call raised (a refused promotion too); nothing changed."""
    error: str | None = None
    """The exception type name when ``ok`` is false (``PromotionRefusedError``: the gate)."""
    record_ids: _RecordIds = ()
    """The record the row is about."""
    ledger_id: str | None = None
    """The ledger row's id (null for a corroboration seen by ``ObservedMemoryStore``,
    which is given the record, not the row)."""
    target: str | None = None
    """Promote and demote: the target kind (``background``, ``heuristic``, ``example``,
    ``awareness``)."""
    evidence_count: int = Field(default=0, ge=0)
    """Pieces of evidence in the row: 1 for a corroboration or a withdrawal, all the gate
    saw for a promotion, 0 for a demotion."""
    conversation_count: int = Field(default=0, ge=0)
    """Distinct conversations among that evidence."""
    supports: int = Field(default=0, ge=0)
    """Pieces of evidence behind the record after the call."""
    approved: bool = False
    """Promote: a person approved it."""


class MemoryLearnEvent(MemoryEvent):
    """``agent.memory.learn``: one corroborate, promote, demote or withdraw."""

    type: Literal["agent.memory.learn"] = LEARN_EVENT_TYPE
    """The event type; also the SSE ``event:`` name and the OpenTelemetry event name."""
    data: MemoryLearnData
    """The type-specific payload."""


class MemoryLearnedData(EventData):
    """The learned sections rendered into one conversation's prompt."""

    record_ids: _RecordIds = ()
    """The promoted records shown, in the order of their lines."""
    kinds: tuple[str, ...] = ()
    """The target kind of each shown line, in the same order."""
    line_count: int = Field(ge=0)
    """Lines shown."""
    omitted: int = Field(ge=0)
    """Promoted records left out for the budget."""
    conversation_count: int = Field(ge=0)
    """Distinct conversations behind the shown lines."""
    chars: int = Field(ge=0)
    """Length of the learned block in characters (0 when none was rendered)."""
    budget_chars: int = Field(ge=0)
    """The learned block's budget."""


class MemoryLearnedEvent(MemoryEvent):
    """``agent.memory.learned``: promoted records rendered as a prompt's learned lines."""

    type: Literal["agent.memory.learned"] = LEARNED_EVENT_TYPE
    """The event type; also the SSE ``event:`` name and the OpenTelemetry event name."""
    data: MemoryLearnedData
    """The type-specific payload."""


def _count(ids: Any) -> int:
    return len(tuple(dict.fromkeys(ids)))


def _from_call(call: StoreCall) -> tuple[dict[str, str], dict[str, Any]] | None:
    result = call.result
    scope = dict(call.arguments.get("scope") or {})
    if call.operation == "corroborate" and isinstance(result, MemoryRecord):
        evidence = call.arguments.get("evidence")
        conversation = getattr(evidence, "conversation_id", None)
        return dict(result.scope), {
            "action": "corroborate",
            "record_ids": [result.id],
            "evidence_count": 1,
            "conversation_count": int(conversation is not None),
            "supports": len(evidence_of(result)),
        }
    if call.operation == "promote" and isinstance(result, Promotion):
        return dict(result.scope), {
            "action": "promote",
            "record_ids": [result.record_id],
            "ledger_id": result.ledger_id,
            "target": result.target.section,
            "evidence_count": len(result.evidence),
            "conversation_count": _count(
                p.conversation_id for p in result.evidence if p.conversation_id
            ),
            "supports": len(result.evidence),
            "approved": result.approved_by is not None,
        }
    if call.operation == "demote" and isinstance(result, LedgerEntry):
        return dict(result.scope), {
            "action": "demote",
            "record_ids": [result.record_id],
            "ledger_id": result.id,
            "target": None if result.target is None else result.target.section,
        }
    return scope, {}


def _emitted(call: StoreCall) -> tuple[dict[str, str], dict[str, Any]] | None:
    found = _from_call(call)
    if found is None or not found[1]:
        return None
    return found


def learned_data(learned: Learned) -> dict[str, Any]:
    """The data of ``agent.memory.learned`` for one assembled overlay."""
    conversations = {c for line in learned.shown for c in line.conversations}
    return {
        "record_ids": [line.record_id for line in learned.shown],
        "kinds": [line.kind for line in learned.shown],
        "line_count": len(learned.shown),
        "omitted": learned.omitted,
        "conversation_count": len(conversations),
        "chars": len(learned.block or ""),
        "budget_chars": learned.budget_chars,
    }


LEARN_EVENT: Final = EventType(
    name=LEARN_EVENT_TYPE,
    model=MemoryLearnEvent,
    operations=("corroborate", "promote", "demote"),
    attributes=(
        OtelAttribute[MemoryLearnEvent](
            GEN_AI_MEMORY_RECORD_ID,
            "data.record_ids[0]",
            lambda e: next(iter(e.data.record_ids), None),
        ),
        OtelAttribute[MemoryLearnEvent]("recallstore.ok", "data.ok", lambda e: e.data.ok),
        OtelAttribute[MemoryLearnEvent](
            "recallstore.learn.action", "data.action", lambda e: e.data.action
        ),
        OtelAttribute[MemoryLearnEvent](
            "recallstore.learn.ledger_id", "data.ledger_id", lambda e: e.data.ledger_id
        ),
        OtelAttribute[MemoryLearnEvent](
            "recallstore.learn.target", "data.target", lambda e: e.data.target
        ),
        OtelAttribute[MemoryLearnEvent](
            "recallstore.learn.evidence_count",
            "data.evidence_count",
            lambda e: e.data.evidence_count,
        ),
        OtelAttribute[MemoryLearnEvent](
            "recallstore.learn.conversation_count",
            "data.conversation_count",
            lambda e: e.data.conversation_count,
        ),
        OtelAttribute[MemoryLearnEvent](
            "recallstore.learn.supports", "data.supports", lambda e: e.data.supports
        ),
        OtelAttribute[MemoryLearnEvent](
            "recallstore.learn.approved", "data.approved", lambda e: e.data.approved
        ),
    ),
    emit=_emitted,
)
"""``agent.memory.learn`` in the catalogue."""


LEARNED_EVENT: Final = EventType(
    name=LEARNED_EVENT_TYPE,
    model=MemoryLearnedEvent,
    log_context="the span active when assemble_learned finished (MemoryCapability.instantiate)",
    attributes=(
        OtelAttribute[MemoryLearnedEvent](
            GEN_AI_MEMORY_RECORD_COUNT, "data.line_count", lambda e: e.data.line_count
        ),
        OtelAttribute[MemoryLearnedEvent](
            "recallstore.record.ids", "data.record_ids", lambda e: e.data.record_ids
        ),
        OtelAttribute[MemoryLearnedEvent](
            "recallstore.learned.kinds", "data.kinds", lambda e: e.data.kinds
        ),
        OtelAttribute[MemoryLearnedEvent](
            "recallstore.learned.omitted", "data.omitted", lambda e: e.data.omitted
        ),
        OtelAttribute[MemoryLearnedEvent](
            "recallstore.learned.conversation_count",
            "data.conversation_count",
            lambda e: e.data.conversation_count,
        ),
        OtelAttribute[MemoryLearnedEvent](
            "recallstore.learned.chars", "data.chars", lambda e: e.data.chars
        ),
        OtelAttribute[MemoryLearnedEvent](
            "recallstore.learned.budget_chars",
            "data.budget_chars",
            lambda e: e.data.budget_chars,
        ),
    ),
)
"""``agent.memory.learned`` in the catalogue."""
