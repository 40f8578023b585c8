"""S25–S28: the ``"promote"`` extension — corroboration, promotion behind a gate, the
ledger, withdrawal and the batch calls.

Runs on stores whose ``capabilities().extensions`` declare ``"promote"``
(:class:`~recallstore.store.SupportsPromotion`); skipped otherwise. What ``delete``
and ``forget`` leave of the ledger is S24's (``recallstore.testing.erasure``).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import cast

import pytest

from recallstore.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from recallstore.records import MemoryRecord, MemoryTarget, Provenance
from recallstore.store import (
    FORGET_EXTENSION,
    PROMOTE_EXTENSION,
    Corroboration,
    MemoryStore,
    PromotionGate,
    PromotionRefusedError,
    SupportsForget,
    SupportsPromotion,
    conversations_of,
)
from recallstore.testing._harness import StoreFactory, StoreHarness, every_record, write_one
from recallstore.testing._rules import kit_test

__all__ = ["LearningConformance"]

_ANA = {"tenant": "acme", "user": "ana"}
_BO = {"tenant": "acme", "user": "bo"}
_BACKGROUND = MemoryTarget(section="background")
_OPEN_GATE = PromotionGate(approval_for=frozenset())
"""Three pieces of evidence from three conversations; no approval asked."""
_RACE_ROUNDS = 10


def _learning(store: MemoryStore) -> SupportsPromotion:
    return cast(SupportsPromotion, store)


def _said_in(conversation: str) -> Provenance:
    return Provenance(conversation_id=conversation, author="user")


async def _taught(store: MemoryStore, times: int = 3, scope: dict[str, str] = _ANA) -> MemoryRecord:
    """A preference said in ``times`` conversations: written once, then corroborated."""
    record = await write_one(
        store, "Ana wants metric units", scope=scope, kind="preference", provenance=_said_in("c-1")
    )
    for n in range(2, times + 1):
        record = await _learning(store).corroborate(
            scope, record.id, _said_in(f"c-{n}"), actor="host", reason="said again"
        )
    return record


class LearningConformance(StoreHarness):
    """Corroborate, promote through the gate, demote, the evolution ledger."""

    @pytest.fixture
    def learning_store(self, store: MemoryStore) -> MemoryStore:
        """The opened store; skips unless it declares the ``"promote"`` extension."""
        if PROMOTE_EXTENSION not in store.capabilities().extensions:
            pytest.skip("promote sub-suite; this store lacks the 'promote' extension")
        return store

    @kit_test(
        "corroborate must add the evidence to the one record's supports (its provenance "
        "first), keep one record, and change nothing for evidence already listed"
    )
    async def test_s25_corroborate_adds_evidence_to_one_record(
        self, learning_store: MemoryStore
    ) -> None:
        store = learning_store
        record = await _taught(store, 3)
        stored = await store.get(record.id)
        assert stored is not None
        assert stored.supports == (_said_in("c-1"), _said_in("c-2"), _said_in("c-3"))
        assert conversations_of(stored) == ("c-1", "c-2", "c-3")
        assert stored == record, "corroborate must return the record as stored"
        assert stored.updated_at >= stored.created_at
        assert [r.id for r in await every_record(store)] == [record.id], "a second copy"
        again = await _learning(store).corroborate(
            _ANA, record.id, _said_in("c-2"), actor="host", reason="said again"
        )
        assert again == stored, "evidence already listed changed the record"
        rows = await _learning(store).ledger(_ANA)
        assert [(r.action, r.conversations) for r in rows] == [
            ("corroborate", ("c-2",)),
            ("corroborate", ("c-3",)),
        ]

    @kit_test(
        "corroborate must refuse a record of another scope or a missing one "
        "(MemoryNotFoundError), an invalidated one (MemoryConflictError) and empty "
        "evidence (MemoryValidationError), changing nothing"
    )
    async def test_s25_corroborate_refuses_and_changes_nothing(
        self, learning_store: MemoryStore
    ) -> None:
        store = learning_store
        learning = _learning(store)
        record = await write_one(store, "Ana likes tea", scope=_ANA, provenance=_said_in("c-1"))
        gone = await write_one(store, "Ana likes coffee", scope=_ANA)
        await store.invalidate(gone.id, "not any more")
        with pytest.raises(MemoryNotFoundError):
            await learning.corroborate(_BO, record.id, _said_in("c-2"), actor="h", reason="r")
        with pytest.raises(MemoryNotFoundError):
            await learning.corroborate(_ANA, "no-such-id", _said_in("c-2"), actor="h", reason="r")
        with pytest.raises(MemoryConflictError):
            await learning.corroborate(_ANA, gone.id, _said_in("c-2"), actor="h", reason="r")
        with pytest.raises(MemoryValidationError):
            await learning.corroborate(_ANA, record.id, Provenance(), actor="h", reason="r")
        with pytest.raises(MemoryValidationError):
            await learning.corroborate(_ANA, record.id, _said_in("c-2"), actor=" ", reason="r")
        assert await store.get(record.id) == record
        assert await learning.ledger() == []

    @kit_test(
        "promote must refuse, changing nothing, a record the gate refuses: too little "
        "evidence, too few conversations, superseded (contradicted) or invalidated, or "
        "needing a person's approval without one"
    )
    async def test_s26_the_gate_holds(self, learning_store: MemoryStore) -> None:
        store = learning_store
        learning = _learning(store)
        thin = await _taught(store, 2)
        with pytest.raises(PromotionRefusedError) as caught:
            await learning.promote(
                _ANA, thin.id, _BACKGROUND, gate=_OPEN_GATE, actor="host", reason="twice"
            )
        assert any("evidence" in r for r in caught.value.decision.refusals)
        old = await _taught(store, 3)
        await write_one(store, "Ana wants imperial units", scope=_ANA, supersedes=old.id)
        with pytest.raises(PromotionRefusedError):
            await learning.promote(
                _ANA, old.id, _BACKGROUND, gate=_OPEN_GATE, actor="host", reason="contradicted"
            )
        fresh = await _taught(store, 3)
        strict = PromotionGate(approval_for=frozenset({"background"}))
        with pytest.raises(PromotionRefusedError):
            await learning.promote(
                _ANA, fresh.id, _BACKGROUND, gate=strict, actor="host", reason="no approval"
            )
        aged = PromotionGate(approval_for=frozenset(), min_age=timedelta(days=30))
        with pytest.raises(PromotionRefusedError):
            await learning.promote(
                _ANA, fresh.id, _BACKGROUND, gate=aged, actor="host", reason="too new"
            )
        with pytest.raises(MemoryNotFoundError):
            await learning.promote(
                _BO, fresh.id, _BACKGROUND, gate=_OPEN_GATE, actor="host", reason="other scope"
            )
        with pytest.raises(MemoryValidationError):
            await learning.promote(
                _ANA,
                fresh.id,
                MemoryTarget(section="system"),
                gate=_OPEN_GATE,
                actor="host",
                reason="not a target",
            )
        assert await learning.promotions(_ANA) == []
        assert [r.action for r in await learning.ledger(_ANA)] == ["corroborate"] * 5
        done = await learning.promote(
            _ANA,
            fresh.id,
            _BACKGROUND,
            gate=strict,
            actor="host",
            reason="approved",
            approved_by="person:ana",
        )
        assert done.record_id == fresh.id
        assert done.approved_by == "person:ana"
        assert [p.record_id for p in await learning.promotions(_ANA)] == [fresh.id]

    @kit_test(
        "promote must make the record a promotion of exactly its scope (another scope never "
        "sees it), refuse a second promotion, and demote must take it back, once"
    )
    async def test_s26_promote_then_demote(self, learning_store: MemoryStore) -> None:
        store = learning_store
        learning = _learning(store)
        record = await _taught(store, 3)
        before = await store.get(record.id)
        promoted = await learning.promote(
            _ANA, record.id, _BACKGROUND, gate=_OPEN_GATE, actor="host", reason="taught thrice"
        )
        assert promoted.target == _BACKGROUND
        assert promoted.scope == _ANA
        assert {p.conversation_id for p in promoted.evidence} == {"c-1", "c-2", "c-3"}
        assert await learning.promotions(_ANA) == [promoted]
        assert await learning.promotions(_BO) == []
        assert await learning.promotions({"tenant": "acme"}) == [], "promotions are scope-exact"
        with pytest.raises(MemoryConflictError):
            await learning.promote(
                _ANA, record.id, _BACKGROUND, gate=_OPEN_GATE, actor="host", reason="again"
            )
        with pytest.raises(MemoryNotFoundError):
            await learning.demote(_BO, record.id, actor="host", reason="other scope")
        demoted = await learning.demote(_ANA, record.id, actor="person:ana", reason="not so")
        assert demoted.action == "demote"
        assert demoted.target == _BACKGROUND
        assert await learning.promotions(_ANA) == []
        with pytest.raises(MemoryConflictError):
            await learning.demote(_ANA, record.id, actor="host", reason="twice")
        assert await store.get(record.id) == before, "promote and demote changed the record"

    @kit_test("two promotions of one record racing each other: exactly one must succeed")
    async def test_s26_racing_promotions_promote_once(self, learning_store: MemoryStore) -> None:
        store = learning_store
        learning = _learning(store)
        for _ in range(_RACE_ROUNDS):
            record = await _taught(store, 3)

            async def attempt(record_id: str = record.id) -> bool:
                try:
                    await learning.promote(
                        _ANA, record_id, _BACKGROUND, gate=_OPEN_GATE, actor="h", reason="race"
                    )
                except MemoryConflictError:
                    return False
                return True

            outcomes = await asyncio.gather(attempt(), attempt())
            assert sorted(outcomes) == [False, True]
            rows = await learning.ledger(_ANA, record_id=record.id)
            assert [r.action for r in rows].count("promote") == 1

    @kit_test(
        "every corroborate, promote and demote must be one ledger row, oldest first, saying "
        "who, when, why and the evidence; a durable store keeps it across reopening"
    )
    async def test_s27_the_ledger_says_who_when_why_and_the_evidence(
        self, store_factory: StoreFactory
    ) -> None:
        async with store_factory() as store:
            if PROMOTE_EXTENSION not in store.capabilities().extensions:
                pytest.skip("promote sub-suite; this store lacks the 'promote' extension")
            learning = _learning(store)
            record = await _taught(store, 3)
            other = await _taught(store, 2, scope=_BO)
            await learning.promote(
                _ANA,
                record.id,
                _BACKGROUND,
                gate=PromotionGate(),
                actor="host:gate",
                reason="taught thrice",
                approved_by="person:ana",
            )
            await learning.demote(_ANA, record.id, actor="person:ana", reason="changed my mind")
            rows = await learning.ledger(_ANA)
        assert [(r.action, r.actor, r.reason) for r in rows] == [
            ("corroborate", "host", "said again"),
            ("corroborate", "host", "said again"),
            ("promote", "host:gate", "taught thrice"),
            ("demote", "person:ana", "changed my mind"),
        ]
        assert all(r.record_id == record.id and r.scope == _ANA for r in rows)
        assert [r.at for r in rows] == sorted(r.at for r in rows)
        assert len({r.id for r in rows}) == 4
        assert rows[2].conversations == ("c-1", "c-2", "c-3")
        assert rows[2].approved_by == "person:ana"
        assert rows[2].target == rows[3].target == _BACKGROUND
        if store.capabilities().durable:
            async with store_factory() as reopened:
                assert await _learning(reopened).ledger(_ANA) == rows
                assert [r.record_id for r in await _learning(reopened).ledger(_BO)] == [other.id]
                assert await _learning(reopened).ledger(record_id=other.id) == (
                    await _learning(reopened).ledger(_BO)
                )

    @kit_test(
        "delete(id) must erase the ledger rows of the record and forget(scope) every row of "
        "the scope, and only those"
    )
    async def test_s27_delete_and_forget_erase_the_ledger(
        self, learning_store: MemoryStore
    ) -> None:
        store = learning_store
        if FORGET_EXTENSION not in store.capabilities().extensions:
            pytest.skip("forget rule; this store lacks the 'forget' extension")
        learning = _learning(store)
        ana = await _taught(store, 3)
        gone = await _taught(store, 3)
        bo = await _taught(store, 3, scope=_BO)
        await learning.promote(_ANA, ana.id, _BACKGROUND, gate=_OPEN_GATE, actor="h", reason="r")
        await store.delete(gone.id)
        assert await learning.ledger(record_id=gone.id) == []
        assert {r.record_id for r in await learning.ledger(_ANA)} == {ana.id}
        assert await cast(SupportsForget, store).forget({"user": "ana"}) == 1
        assert await learning.ledger(_ANA) == []
        assert await learning.promotions(_ANA) == []
        assert {r.record_id for r in await learning.ledger()} == {bo.id}

    @kit_test(
        "withdraw must take the evidence back out of supports, exactly as they were before "
        "the corroborations (reversed) that added it, one withdraw row each, and refuse "
        "evidence not among the supports, changing nothing"
    )
    async def test_s28_withdraw_restores_supports_exactly(
        self, learning_store: MemoryStore
    ) -> None:
        store = learning_store
        learning = _learning(store)
        bare = await write_one(store, "Ana likes tea", scope=_ANA, provenance=_said_in("c-1"))
        odd = await write_one(
            store,
            "Ana likes rain",
            scope=_ANA,
            provenance=_said_in("c-1"),
            supports=(_said_in("c-9"),),  # its provenance not listed: corroborate lists it
        )
        with pytest.raises(MemoryConflictError):  # the provenance, not among its supports
            await learning.withdraw(_ANA, odd.id, _said_in("c-1"), actor="h", reason="r")
        assert await store.get(odd.id) == odd, "a refused withdrawal changed the record"
        items = [
            Corroboration(bare.id, _said_in("c-2"), "said again"),
            Corroboration(odd.id, _said_in("c-2"), "said again"),
            Corroboration(bare.id, _said_in("c-3"), "and again"),
        ]
        added = await learning.corroborate_all(_ANA, items, actor="distiller")
        assert [r.id for r in added] == [bare.id, odd.id, bare.id]
        stored = await store.get(bare.id)
        assert stored is not None
        assert stored.supports == (_said_in("c-1"), _said_in("c-2"), _said_in("c-3"))
        assert stored == added[2], "corroborate_all must return the records as stored"
        with pytest.raises(MemoryConflictError):
            await learning.withdraw(_ANA, bare.id, _said_in("c-7"), actor="h", reason="r")
        with pytest.raises(MemoryNotFoundError):
            await learning.withdraw(_BO, bare.id, _said_in("c-2"), actor="h", reason="r")
        assert await store.get(bare.id) == stored, "a refused withdrawal changed the record"
        undone = await learning.withdraw_all(_ANA, items[::-1], actor="distiller")
        assert [r.id for r in undone] == [bare.id, odd.id, bare.id]
        final = {r.id: r for r in undone}
        for before in (bare, odd):
            after = await store.get(before.id)
            assert after is not None
            assert after.supports == before.supports, "supports are not as they were"
            assert after.model_dump(exclude={"updated_at"}) == before.model_dump(
                exclude={"updated_at"}
            ), "withdraw changed more than supports"
            assert after == final[before.id], "withdraw_all must return them as stored"
        rows = await learning.ledger(_ANA)
        assert [(r.action, r.record_id, r.conversations) for r in rows] == [
            ("corroborate", bare.id, ("c-2",)),
            ("corroborate", odd.id, ("c-2",)),
            ("corroborate", bare.id, ("c-3",)),
            ("withdraw", bare.id, ("c-3",)),
            ("withdraw", odd.id, ("c-2",)),
            ("withdraw", bare.id, ("c-2",)),
        ]
        assert {r.actor for r in rows} == {"distiller"}
        one = await learning.corroborate(_ANA, bare.id, _said_in("c-4"), actor="h", reason="r")
        again = await learning.withdraw(_ANA, bare.id, _said_in("c-4"), actor="h", reason="r")
        assert again.supports == bare.supports != one.supports

    @kit_test(
        "corroborate_all and withdraw_all must land every item or none: one refused item "
        "(an invalidated record, evidence not there, a missing record) changes nothing"
    )
    async def test_s28_batches_land_whole_or_not_at_all(self, learning_store: MemoryStore) -> None:
        store = learning_store
        learning = _learning(store)
        record = await write_one(store, "Ana likes tea", scope=_ANA, provenance=_said_in("c-1"))
        gone = await write_one(store, "Ana likes coffee", scope=_ANA, provenance=_said_in("c-1"))
        await store.invalidate(gone.id, "not any more")
        gone = await store.get(gone.id) or gone
        first = Corroboration(record.id, _said_in("c-2"), "said again")
        with pytest.raises(MemoryConflictError):
            await learning.corroborate_all(
                _ANA, [first, Corroboration(gone.id, _said_in("c-2"), "r")], actor="h"
            )
        with pytest.raises(MemoryNotFoundError):
            await learning.corroborate_all(
                _ANA, [first, Corroboration("no-such-id", _said_in("c-2"), "r")], actor="h"
            )
        with pytest.raises(MemoryValidationError):
            await learning.corroborate_all(
                _ANA, [first, Corroboration(record.id, Provenance(), "r")], actor="h"
            )
        with pytest.raises(MemoryValidationError):
            await learning.corroborate_all(_ANA, [], actor="h")
        assert await store.get(record.id) == record
        assert await learning.ledger() == []
        (added,) = await learning.corroborate_all(_ANA, [first], actor="h")
        second = Corroboration(record.id, _said_in("c-3"), "never said")
        with pytest.raises(MemoryConflictError):
            await learning.withdraw_all(_ANA, [first, second], actor="h")
        assert await store.get(record.id) == added
        assert [r.action for r in await learning.ledger(_ANA)] == ["corroborate"]
