"""Two people's memory over two weeks, for the person page's tests (ASGI and browser).

Alice (``user=qzalice``) said where she lives a week before it was saved, moved, and
saved her tea twice (a consolidation plan marks the copy a duplicate); Bob
(``user=bo``) keeps one fact. Every string of Alice's is distinctive, so a raw scan of
the file can look for each after she is forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from recallstore.consolidation import apply_plan, consolidate
from recallstore.context import call_context
from recallstore.records import MemorySearchQuery, MemoryWriteInput, Provenance
from recallstore.store import MemoryStore
from recallstore.testing.pytest_plugin import FrozenClock

ALICE = {"tenant": "acme", "user": "qzalice"}
BOB = {"tenant": "acme", "user": "bo"}
START = datetime(2026, 11, 1, 9, tzinfo=UTC)
"""The store's clock when Alice's first records are saved."""
MOVED = START + timedelta(days=9)
"""When the move to Porto is saved (2026-11-10)."""
NOW = START + timedelta(days=12)

ALICE_SECRETS = (
    "Quillfeather",  # profile
    "Lisbonqz",  # the old home
    "Portoqz",  # the new one
    "Gyokuroqz",  # the tea, twice
    "convqzalice",  # conversation id
    "runqzalice",  # run id
    "tagqzalice",  # tag
    "qzalice",  # the scope's value
    b"qzalice".hex(),
)
BOB_FACT = "Bob plays chessqz on Sundays."


@dataclass(frozen=True)
class People:
    """The ids the tests look for."""

    profile: str
    lisbon: str
    porto: str
    tea: str
    tea_again: str
    bob: str
    plan_id: str


async def seed_people(store: MemoryStore, clock: FrozenClock) -> People:
    """Write both people's memory on ``store`` (whose clock is ``clock``), apply the
    plan and search Alice's scope; leaves the clock at :data:`NOW`."""
    clock.set(START)
    provenance = Provenance(conversation_id="convqzalice", run_id="runqzalice")
    with call_context(conversation_id="convqzalice", run_id="runqzalice"):
        profile, lisbon, tea = await store.write(
            [
                MemoryWriteInput(
                    scope=ALICE, content="Name is Alice Quillfeather.", kind="profile"
                ),
                MemoryWriteInput(
                    scope=ALICE,
                    content="Lives in Lisbonqz.",
                    observed_at=START - timedelta(days=7),
                    tags=["tagqzalice"],
                    provenance=provenance,
                ),
                MemoryWriteInput(scope=ALICE, content="Drinks Gyokuroqz tea.", kind="preference"),
            ]
        )
        (bob,) = await store.write([MemoryWriteInput(scope=BOB, content=BOB_FACT)])
        clock.set(MOVED)
        porto, tea_again = await store.write(
            [
                MemoryWriteInput(
                    scope=ALICE,
                    content="Moved to Portoqz.",
                    supersedes=lisbon.id,
                    provenance=provenance,
                ),
                MemoryWriteInput(scope=ALICE, content="drinks gyokuroqz tea", kind="preference"),
            ]
        )
        # Plans are kept by the store underneath an observed one.
        revising: MemoryStore = getattr(store, "inner", store)
        plan = await consolidate(revising, ALICE)
        assert [op.record_id for op in plan.changes] == [tea_again.id]
        assert await apply_plan(revising, plan) is not None
        await store.search(MemorySearchQuery(query="Portoqz", scope=ALICE))
    clock.set(NOW)
    return People(
        profile=profile.id,
        lisbon=lisbon.id,
        porto=porto.id,
        tea=tea.id,
        tea_again=tea_again.id,
        bob=bob.id,
        plan_id=plan.id,
    )
