"""The host's gate (issue 39): a pure policy over one record, and what it refuses to build."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from recallstore import MemoryRecord, MemoryTarget, MemoryValidationError, Provenance
from recallstore.store import PromotionGate, conversations_of, evidence_of

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
BACKGROUND = MemoryTarget(section="background")


def _record(supports: list[str], **fields: object) -> MemoryRecord:
    values: dict[str, object] = {
        "id": "rec-1",
        "scope": {"user": "ana"},
        "kind": "preference",
        "content": "Metric units.",
        "provenance": Provenance(conversation_id="c-1"),
        "supports": tuple(Provenance(conversation_id=c) for c in supports),
        "created_at": NOW - timedelta(days=2),
        "updated_at": NOW - timedelta(days=2),
        **fields,
    }
    return MemoryRecord.model_validate(values)


def test_evidence_is_the_provenance_then_the_supports_each_once() -> None:
    record = _record(["c-1", "c-2", "c-2", "c-3"])
    assert conversations_of(record) == ("c-1", "c-2", "c-3")
    assert len(evidence_of(record)) == 3
    assert evidence_of(_record([], provenance=None)) == ()


def test_a_record_that_earned_it_passes() -> None:
    decision = PromotionGate(approval_for=frozenset()).evaluate(
        _record(["c-1", "c-2", "c-3"]), BACKGROUND, NOW
    )
    assert decision.allowed
    assert decision.refusals == ()
    assert decision.conversations == ("c-1", "c-2", "c-3")


@pytest.mark.parametrize(
    ("record", "gate", "approved_by", "words"),
    [
        (_record(["c-1", "c-2"]), PromotionGate(approval_for=frozenset()), None, "evidence"),
        (
            _record(["c-1", "c-1"], provenance=Provenance(conversation_id="c-1", run_id="r-2")),
            PromotionGate(min_supports=2, approval_for=frozenset()),
            None,
            "distinct conversation",
        ),
        (
            _record(["c-1", "c-2", "c-3"], superseded_by="rec-2", invalid_at=NOW),
            PromotionGate(approval_for=frozenset()),
            None,
            "superseded",
        ),
        (
            _record(["c-1", "c-2", "c-3"], expires_at=NOW - timedelta(hours=1)),
            PromotionGate(approval_for=frozenset()),
            None,
            "expired",
        ),
        (
            _record(["c-1", "c-2", "c-3"]),
            PromotionGate(approval_for=frozenset(), min_age=timedelta(days=7)),
            None,
            "not old enough",
        ),
        (
            _record(["c-1", "c-2", "c-3"]),
            PromotionGate(approval_for=frozenset(), kinds=frozenset({"fact"})),
            None,
            "not promoted by this gate",
        ),
        (_record(["c-1", "c-2", "c-3"]), PromotionGate(), None, "approval"),
        (_record(["c-1", "c-2", "c-3"]), PromotionGate(), "", "approval"),
    ],
)
def test_the_gate_refuses_and_says_why(
    record: MemoryRecord, gate: PromotionGate, approved_by: str | None, words: str
) -> None:
    decision = gate.evaluate(record, BACKGROUND, NOW, approved_by)
    assert not decision.allowed
    assert any(words in refusal for refusal in decision.refusals), decision.refusals


def test_approval_opens_what_the_gate_keeps_for_a_person() -> None:
    record = _record(["c-1", "c-2", "c-3"])
    assert PromotionGate().evaluate(record, BACKGROUND, NOW, "person:ana").allowed


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"min_supports": 0}, "min_supports"),
        ({"min_conversations": 0}, "min_conversations"),
        ({"min_age": timedelta(seconds=-1)}, "min_age"),
        ({"approval_for": frozenset({"system"})}, "approval_for"),
    ],
)
def test_a_gate_that_means_nothing_is_refused(options: dict[str, object], field: str) -> None:
    with pytest.raises(MemoryValidationError) as caught:
        PromotionGate(**options)  # type: ignore[arg-type]
    assert caught.value.field == field
