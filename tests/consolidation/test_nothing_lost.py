"""Proof that consolidation loses nothing (issue 27 item 4), on every backend.

Hypothesis builds scopes of near-equal, equal and contradicting statements (written,
superseded and invalidated at random, with neighbours in a sibling and a wider scope),
then consolidates with every deterministic proposer — the optional text slots too, the
most eager — applies the plan and checks: every record that existed is still there and
leads to a valid current record, records of other scopes are untouched, no operation
leaves the scope, a second run proposes only no-ops, and a revert gives byte-identical
search results.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.consolidation._world import current_of, everything, new_scope, search_bytes
from tests.consolidation.conftest import Opener

from recallstore.consolidation import (
    ExactDuplicates,
    NearDuplicates,
    SlotMatch,
    apply_plan,
    consolidate,
    revert_plan,
)
from recallstore.errors import MemoryConflictError
from recallstore.records import MemoryWriteInput
from recallstore.store import MemoryStore

PROPOSERS = (ExactDuplicates(), NearDuplicates(), SlotMatch(by_text=True))

_SUBJECTS = ("Ana", "My sister")
_VERBS = ("likes", "hates", "loves")
_OBJECTS = ("green tea", "Chinese food", "jazz", "Lisbon")
_VARIANTS = (
    lambda text: text,
    lambda text: text + ".",
    lambda text: text.upper(),
    lambda text: text.replace(" ", "   "),
    lambda text: text.replace(" ", " really ", 1),
)

statements = st.builds(
    lambda subject, verb, obj, variant: variant(f"{subject} {verb} {obj}"),
    st.sampled_from(_SUBJECTS),
    st.sampled_from(_VERBS),
    st.sampled_from(_OBJECTS),
    st.sampled_from(_VARIANTS),
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), statements, st.sampled_from(["main", "main", "bo", "wide"])),
        st.tuples(st.just("supersede"), statements, st.integers(0, 40)),
        st.tuples(st.just("invalidate"), st.just(""), st.integers(0, 40)),
    ),
    min_size=1,
    max_size=18,
)


async def _build(
    store: MemoryStore, script: list[tuple[str, str, Any]]
) -> dict[str, dict[str, str]]:
    main = new_scope()
    scopes = {
        "main": main,
        "bo": {**main, "user": "bo"},
        "wide": {"tenant": main["tenant"]},
    }
    written: list[str] = []
    for action, text, where in script:
        if action == "write":
            (record,) = await store.write([MemoryWriteInput(scope=scopes[where], content=text)])
            written.append(record.id)
            continue
        if not written:
            continue
        target = await store.get(written[where % len(written)])
        assert target is not None
        if target.is_invalidated:
            continue
        if action == "invalidate":
            await store.invalidate(target.id, "no longer true")
        else:
            entry = MemoryWriteInput(scope=target.scope, content=text, supersedes=target.id)
            written.append((await store.write([entry]))[0].id)
    return scopes


async def _check_nothing_lost(store: MemoryStore, script: list[tuple[str, str, Any]]) -> None:
    scopes = await _build(store, script)
    main, wide = scopes["main"], scopes["wide"]
    before = await everything(store, wide)
    searched_before = await search_bytes(store, main)
    current_before = {i: await current_of(store, r) for i, r in before.items()}

    plan = await consolidate(store, main, proposers=PROPOSERS)
    assert not plan.rejected, plan.diff()
    for op in plan.operations:
        for named in (op.record_id, op.target_id):
            if named is not None:
                assert before[named].scope == main, "an operation crossed the scope"
    await apply_plan(store, plan)
    after = await everything(store, wide)

    assert set(after) == set(before), "a record was lost"
    for record_id, record in before.items():
        if record.scope != main:
            assert after[record_id] == record, "a record of another scope changed"
        if current_before[record_id] is not None:
            assert await current_of(store, after[record_id]) is not None, (
                f"{record.content!r} leads to no valid record\n{plan.diff()}"
            )
    changed = {op.record_id for op in plan.changes}
    for record_id in before:
        if record_id not in changed:
            assert after[record_id] == before[record_id]

    again = await consolidate(store, main, proposers=PROPOSERS)
    assert again.only_noops, again.diff()

    if plan.changes:
        await revert_plan(store, plan.id)
    assert await search_bytes(store, main) == searched_before
    assert await everything(store, wide) == before


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=steps)
def test_consolidation_loses_nothing_and_reverts_exactly(
    opener: Opener, script: list[tuple[str, str, Any]]
) -> None:
    async def run() -> None:
        async with opener() as store:
            await _check_nothing_lost(store, script)

    asyncio.run(run())


async def _race_round(store: MemoryStore, round_: int) -> None:
    scope = new_scope()
    records = await store.write(
        [
            MemoryWriteInput(scope=scope, content=f"Ana owns {n % 3} boats {round_}")
            for n in range(9)
        ]
    )
    plan = await consolidate(store, scope)
    assert len(plan.changes) == 6
    racing = [records[n] for n in (0, 4, 8)]
    outcomes = await asyncio.gather(
        apply_plan(store, plan),
        *(
            store.write(
                [MemoryWriteInput(scope=scope, content=f"Ana sold boat {r.id}", supersedes=r.id)]
            )
            for r in racing
        ),
        return_exceptions=True,
    )
    applied = not isinstance(outcomes[0], BaseException)
    for outcome in outcomes:
        assert not isinstance(outcome, BaseException) or isinstance(outcome, MemoryConflictError)
    after = await everything(store, scope)
    for op in plan.changes:
        record = after[op.record_id]
        if applied:
            assert record.invalid_reason is not None
            assert plan.id in record.invalid_reason
    for record, outcome in zip(racing, outcomes[1:], strict=True):
        final = after[record.id]
        if isinstance(outcome, BaseException):
            assert applied
            assert record.id in {op.record_id for op in plan.changes}
        else:
            assert isinstance(outcome, list)
            (successor,) = outcome
            assert final.superseded_by == successor.id, "a chain forked"
            assert not (applied and record.id in {op.record_id for op in plan.changes})
    assert [r for r in after.values() if not r.is_invalidated], "nothing valid is left"


def test_writes_racing_an_apply_never_fork_a_chain(opener: Opener) -> None:
    async def run() -> None:
        async with opener() as store:
            for round_ in range(8):
                await _race_round(store, round_)

    asyncio.run(run())
