"""Plans and forgetting (issue 36): a plan that named a deleted record is still listed,
keeps ids only, says what was forgotten and reverts the rest; a revision that holds no
plan is skipped with why; revert refuses ids no revision can have, by name."""

from __future__ import annotations

from typing import Any, cast

import pytest
from tests.consolidation.conftest import Opener

from recallstore.consolidation import (
    ExactDuplicates,
    apply_plan,
    consolidate,
    kept_plans,
    read_kept_plans,
    revert_plan,
)
from recallstore.errors import MemoryValidationError
from recallstore.records import MemoryWriteInput
from recallstore.store import RecordChange, SupportsForget, SupportsRevise

ANA = {"tenant": "acme", "user": "ana"}


async def _duplicates(store: Any) -> tuple[str, str, str]:
    """Ana's two equal records and a plan that marks the older a duplicate of the newer."""
    older, newer = await store.write(
        [
            MemoryWriteInput(scope=ANA, content="Ana keeps bees in Porto"),
            MemoryWriteInput(scope=ANA, content="ana keeps bees in porto"),
        ]
    )
    plan = await consolidate(store, ANA, proposers=[ExactDuplicates()])
    assert await apply_plan(store, plan) is not None
    return plan.id, older.id, newer.id


async def test_a_plan_naming_a_deleted_record_keeps_ids_and_reverts_the_rest(
    opener: Opener,
) -> None:
    async with opener() as store:
        plan_id, older, newer = await _duplicates(store)
        changed = next(op.record_id for op in (await kept_plans(store))[0][0].changes)
        kept_id = newer if changed == older else older
        await store.delete(kept_id)  # the record the plan left valid
        ((plan, revision),) = await kept_plans(store, ANA)
        assert plan.id == plan_id
        assert plan.forgotten == (kept_id,) == revision.forgotten
        assert plan.withheld
        deleted_text = "ana keeps bees in porto" if kept_id == newer else "Ana keeps bees in Porto"
        assert deleted_text not in revision.body
        assert deleted_text not in plan.diff()
        assert f"[{kept_id} fact" in plan.diff()
        assert "(forgotten)" in plan.diff()
        # The record still stored shows its text, read back from the store.
        still = await store.get(changed)
        assert still is not None
        assert still.content in plan.diff()
        reverted = await revert_plan(store, plan_id)
        assert reverted.forgotten == (kept_id,)
        restored = await store.get(changed)
        assert restored is not None
        assert not restored.is_invalidated


async def test_a_plan_of_a_forgotten_scope_is_listed_without_its_scope(opener: Opener) -> None:
    async with opener() as store:
        plan_id, older, newer = await _duplicates(store)
        assert await cast(SupportsForget, store).forget({"user": "ana"}) == 2
        assert await kept_plans(store, ANA) == []
        ((plan, revision),) = await kept_plans(store)
        assert plan.id == plan_id
        assert plan.scope == {} == revision.scope
        assert set(plan.forgotten) == {older, newer}
        assert "ana" not in revision.body.lower().replace("withheld", "")
        assert "(a forgotten scope)" in plan.diff()
        assert (await revert_plan(store, plan_id)).forgotten == plan.forgotten


async def test_a_revision_that_is_no_plan_is_skipped_with_why(opener: Opener) -> None:
    async with opener() as store:
        (record,) = await store.write([MemoryWriteInput(scope=ANA, content="a note")])
        revising = cast(SupportsRevise, store)
        await revising.revise("mine-1", ANA, [RecordChange(record.id, "mine")], "not json")
        plan_id, _, _ = await _duplicates(store)
        assert [plan.id for plan, _ in await kept_plans(store, ANA)] == [plan_id]
        kept = await read_kept_plans(store, ANA)
        ((revision, why),) = kept.skipped
        assert revision.id == "mine-1"
        assert "not a consolidation plan" in why
        with pytest.raises(MemoryValidationError) as caught:
            await revert_plan(store, "mine-1")
        assert caught.value.value == "mine-1"
        again = await revising.revision("mine-1")
        assert again is not None
        assert again.reverted_at is None  # refused before anything was reverted


@pytest.mark.parametrize("bad", ["lone \ud800 surrogate", "nul \x00 inside", 42, None, b"plan"])
async def test_revert_refuses_an_id_no_revision_can_have(opener: Opener, bad: Any) -> None:
    async with opener() as store:
        revising = cast(SupportsRevise, store)
        for call in (
            lambda: revert_plan(store, bad),
            lambda: revising.revert_revision(bad),
            lambda: revising.revision(bad),
        ):
            with pytest.raises(MemoryValidationError) as caught:
                await call()
            assert caught.value.field == "revision_id"
            assert caught.value.value == bad
            assert repr(bad) in caught.value.message
