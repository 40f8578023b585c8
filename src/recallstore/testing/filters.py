"""S8 (kinds and tags filters) and S9 (invalidated and expired records are hidden)."""

from __future__ import annotations

import pytest

from recallstore.store import MemoryStore
from recallstore.testing._harness import (
    StoreHarness,
    hours_from_now,
    memory,
    search_ids,
    write_one,
)
from recallstore.testing._rules import kit_test

__all__ = ["FilterConformance"]

_LISTING_AND_QUERY = pytest.mark.parametrize("query", [None, "orchid"], ids=["listing", "query"])


class FilterConformance(StoreHarness):
    """Kinds, tags, invalidation and expiry filters on listings and keyword queries."""

    @kit_test("kinds=None means every kind")
    @_LISTING_AND_QUERY
    async def test_s8_kinds_none_is_no_filter(self, store: MemoryStore, query: str | None) -> None:
        written = await store.write(
            [memory(f"orchid {kind}", kind=kind) for kind in ("fact", "preference", "episode")]
            + [memory("orchid profile", kind="profile")]
        )
        found = await search_ids(store, query, kinds=None)
        assert set(found) == {record.id for record in written}

    @kit_test("kinds=[] (an empty tuple) matches nothing; do not treat it like None")
    @_LISTING_AND_QUERY
    async def test_s8_empty_kinds_matches_nothing(
        self, store: MemoryStore, query: str | None
    ) -> None:
        await store.write([memory("orchid fact"), memory("orchid profile", kind="profile")])
        assert await search_ids(store, query, kinds=[]) == []
        assert await search_ids(store, query, kinds=[], include_invalidated=True) == []

    @kit_test("filter on kind IN kinds, for listings and keyword queries alike")
    @_LISTING_AND_QUERY
    async def test_s8_kinds_filter_returns_only_the_listed_kinds(
        self, store: MemoryStore, query: str | None
    ) -> None:
        fact, preference, episode, profile = await store.write(
            [
                memory("orchid fact", kind="fact"),
                memory("orchid preference", kind="preference"),
                memory("orchid episode", kind="episode"),
                memory("orchid profile", kind="profile"),
            ]
        )
        assert await search_ids(store, query, kinds=["profile"]) == [profile.id]
        both = await search_ids(store, query, kinds=["fact", "episode"])
        assert set(both) == {fact.id, episode.id}
        assert preference.id not in both

    @kit_test("tags=None and tags=[] both mean no tag filter")
    @_LISTING_AND_QUERY
    async def test_s8_tags_none_and_empty_are_no_filter(
        self, store: MemoryStore, query: str | None
    ) -> None:
        written = await store.write(
            [memory("orchid untagged"), memory("orchid tagged", tags=["garden"])]
        )
        expected = {record.id for record in written}
        assert set(await search_ids(store, query, tags=None)) == expected
        assert set(await search_ids(store, query, tags=[])) == expected

    @kit_test("a record must carry every listed tag (AND, not OR)")
    @_LISTING_AND_QUERY
    async def test_s8_tags_filter_requires_every_listed_tag(
        self, store: MemoryStore, query: str | None
    ) -> None:
        garden_only, both, _untagged, water_only = await store.write(
            [
                memory("orchid one", tags=["garden"]),
                memory("orchid two", tags=["garden", "water", "extra"]),
                memory("orchid three"),
                memory("orchid four", tags=["water"]),
            ]
        )
        assert await search_ids(store, query, tags=["garden", "water"]) == [both.id]
        assert set(await search_ids(store, query, tags=["garden"])) == {garden_only.id, both.id}
        assert set(await search_ids(store, query, tags=["water"])) == {both.id, water_only.id}
        assert await search_ids(store, query, tags=["garden", "missing"]) == []

    @kit_test("compare tags as exact strings, never with LIKE or case folding")
    @_LISTING_AND_QUERY
    async def test_s8_tags_match_exactly_not_by_substring_or_case(
        self, store: MemoryStore, query: str | None
    ) -> None:
        await store.write([memory("orchid tagged", tags=["garden-2024", "Home"])])
        for near_miss in ("garden", "2024", "garden-202", "home", "HOME", "%", "garden%", "_"):
            assert await search_ids(store, query, tags=[near_miss]) == [], near_miss

    @kit_test(
        "exclude records with invalid_at set (invalidated or superseded) unless "
        "include_invalidated=True"
    )
    @_LISTING_AND_QUERY
    async def test_s9_invalidated_records_need_include_invalidated(
        self, store: MemoryStore, query: str | None
    ) -> None:
        invalid = await write_one(store, "orchid invalid")
        superseded = await write_one(store, "orchid superseded")
        successor = await write_one(store, "orchid successor", supersedes=superseded.id)
        await store.invalidate(invalid.id, "wrong")
        assert await search_ids(store, query) == [successor.id]
        included = await search_ids(store, query, include_invalidated=True)
        assert set(included) == {invalid.id, superseded.id, successor.id}

    @kit_test("exclude records with expires_at <= now unless include_expired=True")
    @_LISTING_AND_QUERY
    async def test_s9_expired_records_need_include_expired(
        self, store: MemoryStore, query: str | None
    ) -> None:
        expired, lasting, future = await store.write(
            [
                memory("orchid expired", expires_at=hours_from_now(-1)),
                memory("orchid lasting"),
                memory("orchid expiring later", expires_at=hours_from_now(1)),
            ]
        )
        assert set(await search_ids(store, query)) == {lasting.id, future.id}
        included = await search_ids(store, query, include_expired=True)
        assert set(included) == {expired.id, lasting.id, future.id}

    @kit_test("the two exclusions are independent: a record that is both needs both flags")
    @_LISTING_AND_QUERY
    async def test_s9_invalidated_and_expired_records_need_both_flags(
        self, store: MemoryStore, query: str | None
    ) -> None:
        record = await write_one(store, "orchid both", expires_at=hours_from_now(-2))
        await store.invalidate(record.id)
        assert await search_ids(store, query, include_invalidated=True) == []
        assert await search_ids(store, query, include_expired=True) == []
        both = {"include_invalidated": True, "include_expired": True}
        assert await search_ids(store, query, **both) == [record.id]
