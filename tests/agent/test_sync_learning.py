"""recallstore.sync's memory that learns on a real SQLite file: corroborate, promote
through the gate and demote as blocking calls, the learned overlay, and a distillation
distilled, applied, listed and reverted; errors of a store without the extension."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from tests.backends.plugin.recallstore_jsonl import JsonlMemoryStore

import recallstore.sync
from recallstore.capability import MemoryCapability
from recallstore.consolidation import ProposedFact
from recallstore.errors import ConfigurationError, MemoryConflictError
from recallstore.records import MemoryRecord, MemoryTarget, MemoryWriteInput, Provenance
from recallstore.store import Corroboration, PromotionGate, PromotionRefusedError
from recallstore.sync import SyncMemoryCapability, SyncMemoryStore

ANA = {"tenant": "acme", "user": "ana"}
BO = {"tenant": "acme", "user": "bo"}
GATE = PromotionGate(min_supports=3, min_conversations=3, approval_for=frozenset())
BACKGROUND = MemoryTarget(section="background")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SyncMemoryStore]:
    with SyncMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


def _taught(store: SyncMemoryStore) -> MemoryRecord:
    [record] = store.write(
        [
            MemoryWriteInput(
                scope=ANA,
                kind="preference",
                content="Answer in metric units.",
                provenance=Provenance(conversation_id="c-1"),
            )
        ]
    )
    return record


def test_corroborate_promote_and_demote_block_until_done(store: SyncMemoryStore) -> None:
    record = _taught(store)
    with pytest.raises(PromotionRefusedError):
        store.promote(ANA, record.id, BACKGROUND, gate=GATE, actor="host", reason="too soon")
    for conversation in ("c-2", "c-3"):
        store.corroborate(
            ANA, record.id, Provenance(conversation_id=conversation), actor="host", reason="again"
        )
    assert [s.conversation_id for s in store.get(record.id).supports] == ["c-1", "c-2", "c-3"]  # type: ignore[union-attr]
    before = recallstore.sync.assemble_learned(store, ANA)
    assert before.lines == ()

    promotion = store.promote(ANA, record.id, BACKGROUND, gate=GATE, actor="host", reason="3x")
    assert promotion.record_id == record.id
    assert [p.record_id for p in store.promotions(ANA)] == [record.id]
    assert store.promotions(BO) == []
    learned = recallstore.sync.assemble_learned(store, ANA)
    assert learned.block is not None
    assert "Answer in metric units." in learned.block
    assert "c-1, c-2, c-3" in learned.block

    store.demote(ANA, record.id, actor="host", reason="the user changed their mind")
    assert recallstore.sync.assemble_learned(store, ANA).block == before.block
    actions = [entry.action for entry in store.ledger(ANA, record_id=record.id)]
    assert actions == ["corroborate", "corroborate", "promote", "demote"]
    assert store.ledger(BO) == []


def test_withdrawals_block_and_restore_the_supports(store: SyncMemoryStore) -> None:
    record = _taught(store)
    items = [
        Corroboration(record.id, Provenance(conversation_id=c), "said again")
        for c in ("c-2", "c-3")
    ]
    [_, grown] = store.corroborate_all(ANA, items, actor="host")
    assert [s.conversation_id for s in grown.supports] == ["c-1", "c-2", "c-3"]
    with pytest.raises(MemoryConflictError):
        store.withdraw(ANA, record.id, Provenance(conversation_id="c-9"), actor="h", reason="r")
    store.withdraw(ANA, record.id, items[1].evidence, actor="host", reason="not said")
    [back] = store.withdraw_all(ANA, items[:1], actor="host")
    assert back.supports == record.supports == ()
    assert store.get(record.id) == back
    actions = [entry.action for entry in store.ledger(ANA, record_id=record.id)]
    assert actions == ["corroborate", "corroborate", "withdraw", "withdraw"]


class _OneFact:
    """A distiller proposing one fact citing every captured record it is shown."""

    name = "one-fact"

    async def distil(self, records: Sequence[MemoryRecord]) -> Sequence[ProposedFact]:
        return [
            ProposedFact(
                content="Ana keeps bees.",
                cites=tuple(r.id for r in records),
                reason="she said so twice",
            )
        ]


def test_a_distillation_applies_lists_and_reverts_exactly(store: SyncMemoryStore) -> None:
    for conversation in ("c-1", "c-2"):
        recallstore.sync.capture(
            store, ANA, [("user", "I keep bees in the garden.")], conversation_id=conversation
        )
    before = recallstore.sync.scope_records(store, ANA)
    plan = recallstore.sync.distil(store, ANA, [_OneFact()])
    assert [fact.content for fact in plan.facts] == ["Ana keeps bees."]
    assert recallstore.sync.scope_records(store, ANA) == before  # distil changes nothing

    applied = recallstore.sync.apply_distillation(store, plan)
    [written] = applied.added
    assert {s.conversation_id for s in written.supports} == {"c-1", "c-2"}
    [kept] = recallstore.sync.kept_distillations(store, ANA)
    assert kept.plan_id == plan.id

    recallstore.sync.revert_distillation(store, plan.id)
    after = recallstore.sync.scope_records(store, ANA)
    assert [r for r in after if r.id != written.id] == before
    assert next(r for r in after if r.id == written.id).invalid_at is not None


def test_a_store_without_the_extension_is_refused_by_name(tmp_path: Path) -> None:
    with SyncMemoryStore(JsonlMemoryStore(tmp_path / "plain.jsonl")) as plain:
        with pytest.raises(ConfigurationError, match="'promote' extension"):
            plain.promotions(ANA)
        with pytest.raises(ConfigurationError, match="'promote' extension"):
            plain.ledger()


def test_the_blocking_capability_takes_the_async_ones_parameters() -> None:
    def parameters(function: object) -> list[tuple[str, object]]:
        signature = inspect.signature(function)  # type: ignore[arg-type]
        return [(p.name, p.default) for p in list(signature.parameters.values())[2:]]

    assert parameters(SyncMemoryCapability.__init__) == parameters(MemoryCapability.__init__)


def test_a_blocking_conversation_carries_the_learned_lines(store: SyncMemoryStore) -> None:
    record = _taught(store)
    for conversation in ("c-2", "c-3"):
        store.corroborate(
            ANA, record.id, Provenance(conversation_id=conversation), actor="host", reason="again"
        )
    store.promote(ANA, record.id, BACKGROUND, gate=GATE, actor="host", reason="3x")
    capability = SyncMemoryCapability(store, scope_fields=("tenant", "user"))
    assert capability.store is store
    instance = capability.instantiate(ANA, conversation_id="c-5", first_user_text="units?")
    assert instance.learned is not None
    assert instance.learned_block is not None
    assert "c-1, c-2, c-3" in instance.learned_block
    assert instance.learned_block in instance.instructions
    assert instance.run_id is None
