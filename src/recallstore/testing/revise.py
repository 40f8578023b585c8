"""S21–S23: the ``"revise"`` extension — revisions of existing records, and their revert.

Runs on stores whose ``capabilities().extensions`` declare ``"revise"``
(:class:`~recallstore.store.SupportsRevise`); skipped otherwise.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from recallstore.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from recallstore.records import MemoryRecord
from recallstore.store import REVISE_EXTENSION, MemoryStore, RecordChange, SupportsRevise
from recallstore.testing._harness import StoreHarness, every_record, write_one
from recallstore.testing._rules import kit_test

__all__ = ["ReviseConformance"]

_ANA = {"tenant": "acme", "user": "ana"}
_RACE_ROUNDS = 20


def _revising(store: MemoryStore) -> SupportsRevise:
    return cast(SupportsRevise, store)


async def _states(store: MemoryStore, records: list[MemoryRecord]) -> list[Any]:
    return [await store.get(record.id) for record in records]


class ReviseConformance(StoreHarness):
    """``revise``/``revert_revision``: atomic, scope-exact, compare-and-set, never forking."""

    @pytest.fixture
    def revising_store(self, store: MemoryStore) -> MemoryStore:
        """The opened store; skips unless it declares the ``"revise"`` extension."""
        if REVISE_EXTENSION not in store.capabilities().extensions:
            pytest.skip("revise sub-suite; this store lacks the 'revise' extension")
        return store

    @kit_test(
        "revise must invalidate every named record with its reason and superseded_by, "
        "and keep the revision readable by id and scope"
    )
    async def test_s21_revise_invalidates_and_keeps_the_revision(
        self, revising_store: MemoryStore
    ) -> None:
        store = revising_store
        old = await write_one(store, "Ana loves tea", scope=_ANA)
        copy = await write_one(store, "Ana loves tea", scope=_ANA)
        new = await write_one(store, "Ana hates tea", scope=_ANA)
        changes = [
            RecordChange(old.id, "a newer statement", superseded_by=new.id),
            RecordChange(copy.id, "a duplicate"),
        ]
        kept = await _revising(store).revise("rev-1", _ANA, changes, '{"note": 1}')
        got_old, got_copy, got_new = await _states(store, [old, copy, new])
        assert got_old is not None
        assert got_copy is not None
        assert got_new is not None
        assert got_old.superseded_by == new.id
        assert got_old.invalid_reason == "a newer statement"
        assert got_old.invalid_at is not None
        assert got_old.updated_at == got_old.invalid_at
        assert got_copy.is_invalidated
        assert got_copy.superseded_by is None
        assert got_new == new
        assert [u.id for u in kept.undo] == [old.id, copy.id]
        assert await _revising(store).revision("rev-1") == kept
        assert [r.id for r in await _revising(store).revisions({"user": "ana"})] == ["rev-1"]
        assert await _revising(store).revisions({"user": "bo"}) == []

    @kit_test(
        "revise must refuse, changing nothing, a record missing or of another scope (not "
        "found), already invalid, named twice, a successor it changes, or a kept id (conflict)"
    )
    async def test_s21_revise_refuses_and_changes_nothing(
        self, revising_store: MemoryStore
    ) -> None:
        store = revising_store
        first = await write_one(store, "Ana plays chess", scope=_ANA)
        second = await write_one(store, "Ana plays go", scope=_ANA)
        wider = await write_one(store, "Acme plays go", scope={"tenant": "acme"})
        gone = await write_one(store, "Ana played cards", scope=_ANA)
        await store.invalidate(gone.id, "stopped")
        revising = _revising(store)
        await revising.revise("kept", _ANA, [RecordChange(second.id, "x")], "{}")
        await revising.revert_revision("kept")
        before = await every_record(store)
        cases: list[tuple[type[Exception], list[RecordChange], str]] = [
            (MemoryNotFoundError, [RecordChange(first.id, "x"), RecordChange("nope", "x")], "r1"),
            (MemoryNotFoundError, [RecordChange(first.id, "x"), RecordChange(wider.id, "x")], "r2"),
            (MemoryConflictError, [RecordChange(first.id, "x"), RecordChange(gone.id, "x")], "r3"),
            (MemoryConflictError, [RecordChange(first.id, "x"), RecordChange(first.id, "y")], "r4"),
            (
                MemoryConflictError,
                [RecordChange(first.id, "x", second.id), RecordChange(second.id, "y")],
                "r5",
            ),
            (MemoryNotFoundError, [RecordChange(first.id, "x", wider.id)], "r6"),
            (MemoryConflictError, [RecordChange(first.id, "x", gone.id)], "r7"),
            (MemoryConflictError, [RecordChange(first.id, "x")], "kept"),
        ]
        for error, changes, revision_id in cases:
            with pytest.raises(error):
                await revising.revise(revision_id, _ANA, changes, "{}")
        with pytest.raises(MemoryValidationError):
            await revising.revise("r8", {}, [RecordChange(first.id, "x")], "{}")
        with pytest.raises(MemoryValidationError):
            await revising.revise("r9", _ANA, [], "{}")
        assert await every_record(store) == before
        assert [r.id for r in await revising.revisions()] == ["kept"]

    @kit_test(
        "a successor the revision also changes must lead, along the revision's own links, "
        "to a record it leaves valid: a chain is kept, a cycle or a dead end is a conflict"
    )
    async def test_s21_successors_lead_to_a_valid_record(self, revising_store: MemoryStore) -> None:
        store = revising_store
        a, b, c = [await write_one(store, f"Ana's step {n}", scope=_ANA) for n in "abc"]
        revising = _revising(store)
        before = await every_record(store)
        cycle = [RecordChange(a.id, "x", b.id), RecordChange(b.id, "y", a.id)]
        dead_end = [RecordChange(a.id, "x", b.id), RecordChange(b.id, "y")]
        for changes in (cycle, dead_end):
            with pytest.raises(MemoryConflictError):
                await revising.revise("bad", _ANA, changes, "{}")
        assert await every_record(store) == before
        chain = [RecordChange(a.id, "x", b.id), RecordChange(b.id, "y", c.id)]
        await revising.revise("chain", _ANA, chain, "{}")
        got_a, got_b, got_c = await _states(store, [a, b, c])
        assert got_a is not None
        assert got_a.superseded_by == b.id
        assert got_b is not None
        assert got_b.superseded_by == c.id
        assert got_c == c

    @kit_test(
        "revert_revision must restore invalid_at, invalid_reason, superseded_by and "
        "updated_at exactly as they were, and only once"
    )
    async def test_s22_revert_restores_exactly_once(self, revising_store: MemoryStore) -> None:
        store = revising_store
        old = await write_one(store, "Ana lives in Berlin", scope=_ANA)
        new = await write_one(store, "Ana lives in Lisbon", scope=_ANA)
        spare = await write_one(store, "Ana lives in Porto", scope=_ANA)
        before = await every_record(store)
        revising = _revising(store)
        await revising.revise("move", _ANA, [RecordChange(old.id, "moved", new.id)], "{}")
        await revising.revise("spare", _ANA, [RecordChange(spare.id, "dup")], "{}")
        reverted = await revising.revert_revision("move")
        assert reverted.reverted_at is not None
        await revising.revert_revision("spare")
        assert await every_record(store) == before
        with pytest.raises(MemoryConflictError):
            await revising.revert_revision("move")
        with pytest.raises(MemoryNotFoundError):
            await revising.revert_revision("never-kept")
        kept = await revising.revision("move")
        assert kept is not None
        assert kept.reverted_at == reverted.reverted_at

    @kit_test(
        "revert_revision must restore what it can — a record deleted since is listed in "
        "forgotten, its text gone, and skipped — and refuse, changing nothing, a second revert "
        "or a restored record's idempotency key taken since"
    )
    async def test_s22_revert_refuses_a_changed_world(self, revising_store: MemoryStore) -> None:
        store = revising_store
        kept = await write_one(store, "Ana drinks coffee", scope=_ANA)
        deleted = await write_one(store, "Ana drinks water", scope=_ANA)
        revising = _revising(store)
        changes = [RecordChange(kept.id, "a"), RecordChange(deleted.id, "b")]
        await revising.revise("both", _ANA, changes, '{"secret": "water"}', redacted_body="{}")
        await store.delete(deleted.id)
        # A record deleted since is forgotten: listed, its text gone, skipped by revert.
        forgotten = await revising.revision("both")
        assert forgotten is not None
        assert forgotten.forgotten == (deleted.id,)
        assert forgotten.body == "{}"
        assert forgotten.scope == _ANA
        reverted = await revising.revert_revision("both")
        assert reverted.forgotten == (deleted.id,)
        restored = await store.get(kept.id)
        assert restored is not None
        assert not restored.is_invalidated
        assert await store.get(deleted.id) is None
        with pytest.raises(MemoryConflictError):
            await revising.revert_revision("both")
        if "idempotency" not in store.capabilities().extensions:
            return
        keyed = await write_one(store, "Ana's city is Berlin", scope=_ANA, idempotency_key="city")
        await revising.revise("key", _ANA, [RecordChange(keyed.id, "retired")], "{}")
        taker = await write_one(store, "Ana's city is Rome", scope=_ANA, idempotency_key="city")
        with pytest.raises(MemoryConflictError):
            await revising.revert_revision("key")
        assert await store.get(taker.id) == taker

    @kit_test(
        "a revision racing a supersede of the same record must never fork the chain: "
        "exactly one of them changes it, the other is a conflict"
    )
    async def test_s23_revise_racing_a_supersede_never_forks(
        self, revising_store: MemoryStore
    ) -> None:
        store = revising_store
        revising = _revising(store)
        for round_ in range(_RACE_ROUNDS):
            old = await write_one(store, f"Ana's race fact {round_}", scope=_ANA)
            keep = await write_one(store, f"Ana's race fact {round_} again", scope=_ANA)
            outcomes = await asyncio.gather(
                revising.revise(
                    f"race-{round_}", _ANA, [RecordChange(old.id, "dup", keep.id)], "{}"
                ),
                write_one(store, f"Ana's newer fact {round_}", scope=_ANA, supersedes=old.id),
                return_exceptions=True,
            )
            failed = [o for o in outcomes if isinstance(o, BaseException)]
            assert len(failed) == 1, outcomes
            assert isinstance(failed[0], MemoryConflictError), outcomes
            final = await store.get(old.id)
            assert final is not None
            assert final.is_invalidated
            won_revision = not isinstance(outcomes[0], BaseException)
            assert (final.superseded_by == keep.id) == won_revision
