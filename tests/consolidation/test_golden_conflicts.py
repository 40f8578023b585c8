"""The golden suite: conflicts other memory layers lost facts on, from public bug reports.

* love → hate: mem0 answered "I hate Chinese food" after "I love Chinese food" by
  deleting both (mem0ai/mem0 issues on DELETE events);
* the same fact twice: adding one memory twice deleted it in mem0;
* one name then another ("My name is Ana" → "My name is Bea");
* a correction in another wording ("lives in Berlin" → "moved to Lisbon"), which no
  text rule can see: the host's slot (``target``) or a model proposer finds it.

Every case, on every backend, ends with exactly one valid current fact, and the old one
reachable: by id, in an ``include_invalidated`` search, and along its chain.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from tests.consolidation._world import current_of, everything, new_scope
from tests.consolidation.conftest import Opener

from recallstore.consolidation import (
    ExactDuplicates,
    NearDuplicates,
    Operation,
    Proposer,
    SlotMatch,
    apply_plan,
    consolidate,
)
from recallstore.records import MemoryRecord, MemorySearchQuery, MemoryTarget, MemoryWriteInput
from recallstore.store import MemoryStore
from recallstore.testing import ScriptedProposer


def _supersede_oldest_by_newest(records: Sequence[MemoryRecord]) -> list[Operation]:
    """What a model says for a reworded correction: the older statement is outdated."""
    oldest, newest = records[0], records[-1]
    return [
        Operation(
            action="supersede",
            record_id=oldest.id,
            superseded_by=newest.id,
            reason="she moved: the newer memory corrects the city",
        )
    ]


@dataclass(frozen=True)
class Case:
    name: str
    old: str
    new: str
    proposers: tuple[Proposer, ...]
    slot: str | None = None


CASES = [
    Case(
        "love-then-hate", "I love Chinese food", "I hate Chinese food", (SlotMatch(by_text=True),)
    ),
    Case("same-fact-twice", "I love Chinese food", "I love Chinese food", (ExactDuplicates(),)),
    Case(
        "same-fact-reworded",
        "Ana's favourite drink is green tea",
        "Ana's favourite drink is really green tea.",
        (NearDuplicates(),),
    ),
    Case("one-name-then-another", "My name is Ana", "My name is Bea", (SlotMatch(by_text=True),)),
    Case(
        "correction-in-another-wording-by-slot",
        "Ana lives in Berlin",
        "Ana moved to Lisbon last spring",
        (SlotMatch(),),
        slot="home_city",
    ),
    Case(
        "correction-in-another-wording-by-model",
        "Ana lives in Berlin",
        "Ana moved to Lisbon last spring",
        (ScriptedProposer(_supersede_oldest_by_newest, name="model"),),
    ),
]


async def _run_case(store: MemoryStore, case: Case) -> None:
    scope = new_scope()
    target = None if case.slot is None else MemoryTarget(section="profile", key=case.slot)
    (old,) = await store.write([MemoryWriteInput(scope=scope, content=case.old, target=target)])
    (new,) = await store.write([MemoryWriteInput(scope=scope, content=case.new, target=target)])
    neighbour = {**scope, "user": "bo"}
    (bo,) = await store.write([MemoryWriteInput(scope=neighbour, content=case.old)])

    plan = await consolidate(store, scope, proposers=case.proposers)
    assert len(plan.changes) == 1, plan.diff()
    assert not plan.rejected, plan.diff()
    await apply_plan(store, plan)

    records = await everything(store, scope)
    mine = {i: r for i, r in records.items() if r.scope == scope}
    valid = [r for r in mine.values() if not r.is_invalidated]
    assert len(valid) == 1, plan.diff()
    kept = valid[0]
    gone = old if kept.id == new.id else new
    assert kept.id in (old.id, new.id)
    if case.old != case.new:
        assert kept.id == new.id, "the newer statement must be the current one"
    stored = await store.get(gone.id)
    assert stored is not None
    assert stored.is_invalidated
    assert stored.content == gone.content
    hits = await store.search(
        MemorySearchQuery(query=gone.content, scope=scope, include_invalidated=True)
    )
    assert gone.id in [hit.record.id for hit in hits]
    assert await current_of(store, stored) == kept
    assert await store.get(bo.id) == bo, "the neighbour's equal fact is untouched"
    again = await consolidate(store, scope, proposers=case.proposers)
    assert again.only_noops, again.diff()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_every_conflict_ends_with_one_current_fact_and_the_old_one_reachable(
    opener: Opener, case: Case
) -> None:
    async def run() -> None:
        async with opener() as store:
            await _run_case(store, case)

    asyncio.run(run())


def test_the_default_proposers_leave_contradictions_alone() -> None:
    """Without the opt-in text slots, love and hate both stay: nothing is guessed."""

    async def run() -> None:
        from recallstore.backends.memory import InMemoryMemoryStore

        async with InMemoryMemoryStore() as store:
            scope = new_scope()
            for text in ("I love Chinese food", "I hate Chinese food", "Ana has a cat"):
                await store.write([MemoryWriteInput(scope=scope, content=text)])
            assert (await consolidate(store, scope)).only_noops

    asyncio.run(run())
