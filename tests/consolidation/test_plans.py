"""Plans: every proposal validated, apply atomic with one event per operation, dry runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.backends.plugin.recallstore_jsonl import JsonlMemoryStore

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.consolidation import (
    Operation,
    apply_plan,
    consolidate,
    kept_plans,
    revert_plan,
)
from recallstore.errors import ConfigurationError, MemoryConflictError, MemoryValidationError
from recallstore.records import MemoryWriteInput
from recallstore.testing import ScriptedProposer

ANA = {"tenant": "acme", "user": "ana"}
BO = {"tenant": "acme", "user": "bo"}


def _dup(record_id: str, of: str, reason: str = "same") -> Operation:
    return Operation(action="duplicate", record_id=record_id, duplicate_of=of, reason=reason)


def test_an_operation_needs_a_reason_and_the_right_target() -> None:
    with pytest.raises(MemoryValidationError, match="reason"):
        Operation(action="duplicate", record_id="a", duplicate_of="b", reason="   ")
    with pytest.raises(MemoryValidationError, match="needs superseded_by"):
        Operation(action="supersede", record_id="a", reason="newer")
    with pytest.raises(MemoryValidationError, match="must not name duplicate_of"):
        Operation(action="noop", record_id="a", duplicate_of="b", reason="fine")
    with pytest.raises(MemoryValidationError):
        Operation.model_validate({"action": "delete", "record_id": "a", "reason": "gone"})


async def test_every_bad_proposal_is_rejected_with_its_problem() -> None:
    async with InMemoryMemoryStore() as store:
        a, b, c, d = await store.write(
            [MemoryWriteInput(scope=ANA, content=f"Ana fact {n}") for n in range(4)]
        )
        (wider,) = await store.write([MemoryWriteInput(scope={"tenant": "acme"}, content="x")])
        (other,) = await store.write([MemoryWriteInput(scope=BO, content="Bo fact")])
        (dead,) = await store.write([MemoryWriteInput(scope=ANA, content="Ana old fact")])
        await store.invalidate(dead.id)
        script = [
            _dup(a.id, b.id),  # accepted
            _dup(other.id, b.id),  # another scope
            _dup(wider.id, b.id),  # a wider scope
            _dup("missing", b.id),  # no such record
            _dup(dead.id, b.id),  # not valid
            _dup(c.id, c.id),  # itself
            _dup(c.id, other.id),  # replacement outside the scope
            _dup(c.id, a.id),  # replacement changed earlier
            _dup(b.id, d.id),  # b was kept for a: a's chain now leads on to d
            _dup(a.id, d.id),  # named twice
            _dup(c.id, d.id),  # over the cap of 2
        ]
        plan = await consolidate(store, ANA, proposers=[ScriptedProposer(script)], cap=2)
        assert [op.record_id for op in plan.operations] == [a.id, b.id]
        problems = [r.problem for r in plan.rejected]
        assert problems == [
            "not a valid record of this scope",
            "not a valid record of this scope",
            "not a valid record of this scope",
            "not a valid record of this scope",
            "a record cannot replace itself",
            "its replacement is not a valid record of this scope",
            "its replacement is changed by an earlier operation of this plan",
            "an earlier operation of this plan already names this record",
            "over the cap of 2 changes per run",
        ]
        assert "! rejected duplicate of missing from scripted" in plan.diff()


async def test_a_dry_run_changes_nothing_and_shows_the_diff() -> None:
    async with InMemoryMemoryStore() as store:
        old, new = await store.write(
            [
                MemoryWriteInput(scope=ANA, content="Lives in Lisbon."),
                MemoryWriteInput(scope=ANA, content="lives in lisbon"),
            ]
        )
        plan = await consolidate(store, ANA)
        assert await store.get(new.id) == new
        diff = plan.diff()
        assert f"- [{new.id} fact" in diff
        assert f"= [{old.id} fact" in diff
        assert "duplicate of: the same text, saved again" in diff


async def test_a_stale_plan_is_a_conflict_and_changes_nothing(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "m.db") as store:
        records = await store.write(
            [MemoryWriteInput(scope=ANA, content="Has a cat.") for _ in range(3)]
        )
        plan = await consolidate(store, ANA)
        assert len(plan.changes) == 2
        await store.invalidate(records[2].id, "changed meanwhile")
        before = [await store.get(r.id) for r in records]
        with pytest.raises(MemoryConflictError):
            await apply_plan(store, plan)
        assert [await store.get(r.id) for r in records] == before
        assert await kept_plans(store) == []


async def test_apply_journals_one_event_per_operation_and_keeps_the_plan(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "m.db") as store:
        await store.write([MemoryWriteInput(scope=ANA, content="Has a cat.") for _ in range(4)])
        await store.flush_journal()
        (_, start) = await store.journal_bounds()
        plan = await consolidate(store, ANA)
        await apply_plan(store, plan)
        await store.flush_journal()
        events = await store.read_journal(after=start)
        changed = {op.record_id for op in plan.changes}
        writes = [e for e in events if e.type == "agent.memory.write"]
        assert len(writes) == 3
        assert {e.envelope["data"]["record_ids"][0] for e in writes} == changed
    async with SqliteMemoryStore(tmp_path / "m.db") as reopened:
        ((kept, revision),) = await kept_plans(reopened, {"user": "ana"})
        assert kept == plan
        assert revision.reverted_at is None
        await revert_plan(reopened, plan.id)
        ((_, revision),) = await kept_plans(reopened)
        assert revision.reverted_at is not None


async def test_a_plan_of_noops_applies_as_nothing() -> None:
    async with InMemoryMemoryStore() as store:
        (only,) = await store.write([MemoryWriteInput(scope=ANA, content="Has a cat.")])
        noop = Operation(action="noop", record_id=only.id, reason="fine as it is")
        plan = await consolidate(store, ANA, proposers=[ScriptedProposer([noop])])
        assert plan.only_noops
        assert len(plan.operations) == 1
        assert await apply_plan(store, plan) is None
        assert await kept_plans(store) == []


async def test_a_store_without_revise_cannot_apply(tmp_path: Path) -> None:
    async with JsonlMemoryStore(tmp_path / "m.jsonl") as store:
        await store.write([MemoryWriteInput(scope=ANA, content="Has a cat.") for _ in range(2)])
        plan = await consolidate(store, ANA)
        with pytest.raises(ConfigurationError, match="'revise' extension"):
            await apply_plan(store, plan)


async def test_consolidation_needs_a_scope() -> None:
    async with InMemoryMemoryStore() as store:
        with pytest.raises(MemoryValidationError, match="scope"):
            await consolidate(store, {})
