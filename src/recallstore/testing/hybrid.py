"""Sub-suite for ``capabilities().search == "hybrid"``: search by meaning, same rules.

The store under test must have been built with the kit's :class:`ToyEmbedder` (or an
embedder that puts the words of each of its ``DEFAULT_CONCEPTS`` close together). A
paraphrase sharing no word with a record finds it; scope, kinds, tags, invalidation,
expiry, deletion and the limit hold exactly as for keyword search. An embedder switch
made by another opener (``reembed``) is noticed on the next call (S18).
"""

from __future__ import annotations

from typing import Any

import pytest

from recallstore.errors import EmbedderSwitchedError
from recallstore.records import MemorySearchQuery
from recallstore.store import MemoryStore
from recallstore.testing._harness import (
    StoreFactory,
    StoreHarness,
    every_record,
    hours_from_now,
    memory,
    search_ids,
    unwrap,
    write_fillers,
    write_one,
)
from recallstore.testing._rules import kit_test
from recallstore.testing.embedder import ToyEmbedder

__all__ = ["HybridSearchConformance"]

_JOB = "started a new job at the clinic in May"
_QUESTION = "where does she work"  # no word in common with _JOB
_SWITCHED = ToyEmbedder(dimension=64, name="recallstore-kit-switched")
"""The embedder another opener switches to (S18): another name and dimension."""


class HybridSearchConformance(StoreHarness):
    """Hybrid search: meaning as well as words, under every filter of S7–S12."""

    @pytest.fixture
    def hybrid_store(self, store: MemoryStore) -> MemoryStore:
        """The opened store; skips the test unless ``capabilities().search == "hybrid"``."""
        if store.capabilities().search != "hybrid":
            pytest.skip("hybrid-search rule; this store's search is not 'hybrid'")
        return store

    @kit_test("a hybrid search must find a record that says the query in other words")
    async def test_s11_hybrid_finds_a_paraphrase_sharing_no_word(
        self, hybrid_store: MemoryStore
    ) -> None:
        await write_fillers(hybrid_store, 6)
        record = await write_one(hybrid_store, _JOB)
        assert record.id in await search_ids(hybrid_store, _QUESTION)

    @kit_test("a record holding the query's words and meaning must rank above one of meaning only")
    async def test_s11_hybrid_ranks_words_and_meaning_first(
        self, hybrid_store: MemoryStore
    ) -> None:
        meaning = await write_one(hybrid_store, "the clinic hired her in spring")
        both = await write_one(hybrid_store, "she loves her work at the clinic")
        found = await search_ids(hybrid_store, "her work")
        assert found[:2] == [both.id, meaning.id]

    @kit_test("a hybrid search must keep to the scope filter (S7)")
    async def test_s7_hybrid_keeps_to_the_scope(self, hybrid_store: MemoryStore) -> None:
        mine = await write_one(hybrid_store, _JOB, scope={"user": "ana"})
        await write_one(hybrid_store, _JOB, scope={"user": "bo"})
        assert await search_ids(hybrid_store, _QUESTION, scope={"user": "ana"}) == [mine.id]

    @kit_test("a hybrid search must apply kinds and tags (S8)")
    async def test_s8_hybrid_applies_kinds_and_tags(self, hybrid_store: MemoryStore) -> None:
        fact = await write_one(hybrid_store, _JOB, tags=["career"])
        await write_one(hybrid_store, _JOB, kind="episode", tags=["career"])
        await write_one(hybrid_store, _JOB)
        found = await search_ids(hybrid_store, _QUESTION, kinds=["fact"], tags=["career"])
        assert found == [fact.id]

    @kit_test("a hybrid search must leave out invalidated and expired records unless asked (S9)")
    async def test_s9_hybrid_leaves_out_invalid_and_expired(
        self, hybrid_store: MemoryStore
    ) -> None:
        old = await write_one(hybrid_store, _JOB)
        new = await write_one(hybrid_store, "moved to a job at the office", supersedes=old.id)
        gone = await write_one(hybrid_store, "hired by the clinic", expires_at=hours_from_now(-1))
        assert await search_ids(hybrid_store, _QUESTION) == [new.id]
        everything = await search_ids(
            hybrid_store, _QUESTION, include_invalidated=True, include_expired=True
        )
        assert set(everything) == {old.id, new.id, gone.id}

    @kit_test("a deleted record must never come back from a hybrid search (S5)")
    async def test_s5_hybrid_never_returns_a_deleted_record(
        self, hybrid_store: MemoryStore
    ) -> None:
        record = await write_one(hybrid_store, _JOB)
        await hybrid_store.delete(record.id)
        assert await search_ids(hybrid_store, _QUESTION) == []

    @kit_test("a hybrid search must return at most limit hits, best first (S12)")
    async def test_s12_hybrid_respects_the_limit(self, hybrid_store: MemoryStore) -> None:
        for place in ("clinic", "office", "employer", "career", "job"):
            await write_one(hybrid_store, f"{place} news")
        hits = await hybrid_store.search(MemorySearchQuery(query=_QUESTION, limit=3))
        assert len(hits) == 3
        scores = [hit.score or 0.0 for hit in hits]
        assert scores == sorted(scores, reverse=True)

    @kit_test(
        "a store open with the old embedder must refuse (EmbedderSwitchedError, nothing "
        "written) writes and hybrid searches once another opener re-embedded the store, "
        "and an opener with the new embedder must write and find records"
    )
    async def test_s18_an_embedder_switch_by_another_opener_is_noticed(
        self, hybrid_store: MemoryStore, store_factory: StoreFactory
    ) -> None:
        caps = hybrid_store.capabilities()
        if not caps.durable or caps.single_opener:
            pytest.skip("several-openers rule; this store has no second opener")
        old = unwrap(hybrid_store)
        switcher: Any = store_factory()
        if not callable(getattr(switcher, "reembed", None)):
            pytest.skip("embedder-switch rule; this store has no reembed()")
        first = await write_one(old, _JOB)
        async with switcher:
            await switcher.reembed(_SWITCHED)
            assert switcher.embedder.name == _SWITCHED.name
            # The switcher now searches and writes with the new model.
            assert first.id in await search_ids(switcher, _QUESTION)
            second = await write_one(switcher, "hired by the office")
            assert second.id in await search_ids(switcher, "job")
        stored = len(await every_record(old))
        with pytest.raises(EmbedderSwitchedError):
            await old.write([memory("a career at the clinic")])
        with pytest.raises(EmbedderSwitchedError):
            await old.search(MemorySearchQuery(query=_QUESTION))
        assert len(await every_record(old)) == stored, "a refused write wrote something"
