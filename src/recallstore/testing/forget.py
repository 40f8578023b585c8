"""S17: ``forget(scope)`` erases every record of a scope, in one transaction.

Runs on stores whose ``capabilities().extensions`` declare ``"forget"``
(:class:`~recallstore.store.SupportsForget`); skipped otherwise.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from recallstore.errors import MemoryNotFoundError, MemoryValidationError, StoreUnavailableError
from recallstore.records import MemoryRecord
from recallstore.store import FORGET_EXTENSION, MemoryStore, SupportsForget
from recallstore.testing._harness import (
    StoreFactory,
    StoreHarness,
    every_record,
    hours_from_now,
    ids,
    memory,
    search_ids,
    unwrap,
    write_one,
)
from recallstore.testing._rules import kit_test

__all__ = ["ForgetConformance"]

_ANA = {"tenant": "acme", "user": "ana"}
_BO = {"tenant": "acme", "user": "bo"}
_EVERYTHING: dict[str, Any] = {"include_invalidated": True, "include_expired": True}
_RACE_ROUNDS = 50
"""Rounds of forget racing a supersede (S17): a backend that misses the successor
under READ COMMITTED did so in most rounds."""


def _forget(store: MemoryStore, scope: dict[str, str]) -> Any:
    return cast(SupportsForget, store).forget(scope)


async def _ana_and_bo(store: MemoryStore) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """Ana's records in every state (valid, invalidated, superseded, expired) and Bo's."""
    valid = await write_one(store, "Ana drinks quinceberry tea", scope=_ANA)
    invalidated = await write_one(store, "Ana lives in quincetown", scope=_ANA)
    await store.invalidate(invalidated.id, "moved")
    old = await write_one(store, "Ana plays quincetar badly", scope=_ANA)
    new = await write_one(store, "Ana plays quincetar well", scope=_ANA, supersedes=old.id)
    expired = await write_one(
        store, "Ana has a quince meeting", scope=_ANA, expires_at=hours_from_now(-1)
    )
    bo = [
        await write_one(store, "Bo drinks quinceberry juice", scope=_BO),
        await write_one(store, "Acme sells quinceberry jam", scope={"tenant": "acme"}),
        await write_one(store, "Nobody's quinceberry note"),
    ]
    ana = [valid, invalidated, old, new, expired]
    return [r for r in ana if r.id != old.id] + [old], bo


class ForgetConformance(StoreHarness):
    """``forget(scope)``: every record whose scope contains the pairs, at once, nothing else."""

    @pytest.fixture
    def forgetting_store(self, store: MemoryStore) -> MemoryStore:
        """The opened store; skips unless it declares the ``"forget"`` extension."""
        if FORGET_EXTENSION not in store.capabilities().extensions:
            pytest.skip("forget sub-suite; this store lacks the 'forget' extension")
        return store

    @kit_test(
        "forget(scope) must delete every record whose scope contains the pairs — invalidated, "
        "superseded and expired ones too — and return how many it deleted"
    )
    async def test_s17_forget_deletes_every_record_of_the_scope(
        self, forgetting_store: MemoryStore
    ) -> None:
        store = forgetting_store
        ana, others = await _ana_and_bo(store)
        assert await _forget(store, {"user": "ana"}) == len(ana)
        for record in ana:
            assert await store.get(record.id) is None, record.content
        assert sorted(ids(await every_record(store))) == sorted(ids(others))
        assert await search_ids(store, scope={"user": "ana"}, **_EVERYTHING) == []
        assert await _forget(store, {"user": "ana"}) == 0

    @kit_test(
        "forget must match like the scope filter (S7): a record whose scope holds every pair, "
        "exact and case-sensitive; never a record lacking one of them"
    )
    async def test_s17_forget_matches_scopes_like_the_scope_filter(
        self, forgetting_store: MemoryStore
    ) -> None:
        store = forgetting_store
        ana, others = await _ana_and_bo(store)
        assert await _forget(store, {"user": "Ana"}) == 0
        assert await _forget(store, {"tenant": "acme", "user": "zed"}) == 0
        assert await _forget(store, {"tenant": "acme ", "user": "ana"}) == 0
        assert len(await every_record(store)) == len(ana) + len(others)
        assert await _forget(store, {"tenant": "acme", "user": "ana"}) == len(ana)
        # A tenant-wide forget takes the tenant's per-user and tenant-level records alike.
        assert await _forget(store, {"tenant": "acme"}) == 2
        assert [record.content for record in await every_record(store)] == [
            "Nobody's quinceberry note"
        ]

    @kit_test("forget must take the records' words out of the keyword index and its statistics")
    async def test_s17_forgotten_words_leave_the_keyword_index(
        self, forgetting_store: MemoryStore
    ) -> None:
        store = forgetting_store
        if store.capabilities().search != "keyword":
            pytest.skip("keyword-search rule; this store's search is not 'keyword'")
        await _ana_and_bo(store)
        await _forget(store, {"user": "ana"})
        assert await search_ids(store, "quincetown quincetar", **_EVERYTHING) == []
        kept = await search_ids(store, "quinceberry", **_EVERYTHING)
        assert len(kept) == 3
        again = await write_one(store, "Ana moved back to quincetown", scope=_ANA)
        assert await search_ids(store, "quincetown") == [again.id]

    @kit_test(
        "forget({}) would erase the whole store: it must raise MemoryValidationError on "
        "scope and delete nothing"
    )
    async def test_s17_forget_refuses_an_empty_scope(self, forgetting_store: MemoryStore) -> None:
        store = forgetting_store
        ana, others = await _ana_and_bo(store)
        with pytest.raises(MemoryValidationError) as caught:
            await _forget(store, {})
        assert caught.value.field == "scope"
        with pytest.raises(MemoryValidationError):
            await _forget(store, {"": "ana"})
        assert len(await every_record(store)) == len(ana) + len(others)

    @kit_test("forget must be one transaction: a concurrent reader sees all or none of the scope")
    async def test_s17_forget_is_all_or_nothing_for_readers(
        self, forgetting_store: MemoryStore
    ) -> None:
        store = forgetting_store
        await store.write([memory(f"quince batch note {n}", scope=_ANA) for n in range(60)])
        seen: list[int] = []

        async def watch() -> None:
            for _ in range(20):
                seen.append(len(await search_ids(store, scope=_ANA, limit=1000)))
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        assert await _forget(store, _ANA) == 60
        await watcher
        assert set(seen) <= {0, 60}, seen
        assert await every_record(store) == []

    @kit_test("forget must survive closing and reopening a durable store")
    async def test_s17_forget_is_durable(self, store_factory: StoreFactory) -> None:
        first = store_factory()
        if FORGET_EXTENSION not in first.capabilities().extensions:
            pytest.skip("forget sub-suite; this store lacks the 'forget' extension")
        if not first.capabilities().durable:
            pytest.skip("durability rule; this store declares durable=False")
        async with first:
            ana, others = await _ana_and_bo(first)
            assert await _forget(first, {"user": "ana"}) == len(ana)
        async with store_factory() as again:
            assert sorted(ids(await every_record(again))) == sorted(ids(others))

    @kit_test("forget on a closed store must raise StoreUnavailableError")
    async def test_s17_forget_on_a_closed_store_raises(self, store_factory: StoreFactory) -> None:
        store = store_factory()
        if FORGET_EXTENSION not in store.capabilities().extensions:
            pytest.skip("forget sub-suite; this store lacks the 'forget' extension")
        async with store:
            await write_one(store, "kept", scope=_ANA)
        with pytest.raises(StoreUnavailableError):
            await _forget(store, _ANA)

    @kit_test(
        "forget racing a supersede in its scope must leave nothing of the scope: a successor "
        "whose predecessor forget deleted was written before the forget, so it goes too"
    )
    async def test_s17_forget_racing_supersedes_leaves_no_survivor(
        self, forgetting_store: MemoryStore, store_factory: StoreFactory
    ) -> None:
        # Unchecked: the other opener's successors are unknown to the checked store.
        store = unwrap(forgetting_store)
        # Another opener of the same data races the supersedes where there can be one
        # (another connection, another transaction); else the store races itself.
        caps = store.capabilities()
        other = store_factory() if caps.durable and not caps.single_opener else None
        racer = store if other is None else other
        if other is not None:
            await other.__aenter__()
        survivors = []
        try:
            for round_number in range(_RACE_ROUNDS):
                scope = {"tenant": "acme", "user": f"racer-{round_number}"}
                old = await write_one(store, "Ana keeps quince bees", scope=scope)
                outcomes = await asyncio.gather(
                    racer.write([memory("Ana keeps quince wasps", scope=scope, supersedes=old.id)]),
                    _forget(store, scope),
                    return_exceptions=True,
                )
                for outcome in outcomes:
                    # A supersede that comes after the forget finds its target gone.
                    if isinstance(outcome, BaseException) and not isinstance(
                        outcome, MemoryNotFoundError
                    ):
                        raise outcome
                left = await search_ids(store, scope=scope, **_EVERYTHING)
                if left:
                    survivors.append((round_number, left))
        finally:
            if other is not None:
                await other.__aexit__(None, None, None)
        assert survivors == [], (
            f"{len(survivors)} of {_RACE_ROUNDS} rounds left a record in the forgotten scope"
        )
