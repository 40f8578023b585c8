"""S12: the result limit — default 10, maximum 1000, and ``0`` means no results."""

from __future__ import annotations

import pytest

from recallstore.errors import MemoryValidationError
from recallstore.records import DEFAULT_LIMIT, MAX_LIMIT, MemorySearchQuery
from recallstore.store import MemoryStore
from recallstore.testing._harness import (
    StoreHarness,
    every_record,
    ids,
    memory,
    search_ids,
    write_fillers,
)
from recallstore.testing._rules import kit_test

__all__ = ["LimitConformance"]

_LISTING_AND_QUERY = pytest.mark.parametrize("query", [None, "anchor"], ids=["listing", "query"])


class LimitConformance(StoreHarness):
    """The same limit rules on every backend, for listings and keyword queries."""

    @kit_test("limit=0 means no results, not the default")
    @_LISTING_AND_QUERY
    async def test_s12_limit_zero_returns_empty_list(
        self, store: MemoryStore, query: str | None
    ) -> None:
        await store.write([memory(f"anchor record {n}") for n in range(5)])
        assert await search_ids(store, query, limit=0) == []
        everything = {"include_invalidated": True, "include_expired": True}
        assert await search_ids(store, query, limit=0, **everything) == []

    @kit_test("apply MemorySearchQuery.limit (default 10) to listings and queries")
    @_LISTING_AND_QUERY
    async def test_s12_default_limit_is_ten(self, store: MemoryStore, query: str | None) -> None:
        written = await store.write([memory(f"anchor record {n}") for n in range(15)])
        found = await search_ids(store, query)
        assert len(found) == DEFAULT_LIMIT == 10
        if query is None:
            assert found == ids(reversed(written))[:10]

    @kit_test("limit must cut the ordered result, keeping its head")
    @_LISTING_AND_QUERY
    async def test_s12_limit_one_returns_the_first_result_only(
        self, store: MemoryStore, query: str | None
    ) -> None:
        await write_fillers(store, 20)
        await store.write([memory(f"anchor record {n}") for n in range(5)])
        first = await search_ids(store, query, limit=1)
        assert len(first) == 1
        assert first == (await search_ids(store, query, limit=10))[:1]

    @kit_test("a limit above the match count returns every match")
    @_LISTING_AND_QUERY
    async def test_s12_limit_above_the_match_count_returns_every_match(
        self, store: MemoryStore, query: str | None
    ) -> None:
        written = await store.write([memory(f"anchor record {n}") for n in range(7)])
        assert set(await search_ids(store, query, limit=50)) == set(ids(written))

    @kit_test("MemorySearchQuery refuses the limit; the store must not clamp or widen it")
    @pytest.mark.parametrize("limit", [-1, -1000, MAX_LIMIT + 1, 10**9])
    async def test_s12_limit_out_of_range_is_refused_before_any_io(
        self, store: MemoryStore, limit: int
    ) -> None:
        await store.write([memory("anchor record")])
        before = await every_record(store)
        with pytest.raises(MemoryValidationError) as caught:
            MemorySearchQuery(query="anchor", limit=limit)
        assert caught.value.field == "limit"
        with pytest.raises(MemoryValidationError):
            MemorySearchQuery.model_validate({"query": None, "limit": limit})
        assert await every_record(store) == before

    @kit_test("do not cap results below MAX_LIMIT (1000)")
    @_LISTING_AND_QUERY
    async def test_s12_maximum_limit_returns_a_thousand_records(
        self, store: MemoryStore, query: str | None
    ) -> None:
        written = await store.write([memory(f"anchor record {n}") for n in range(MAX_LIMIT + 5)])
        found = await search_ids(store, query, limit=MAX_LIMIT)
        assert len(found) == MAX_LIMIT == 1000
        assert len(set(found)) == MAX_LIMIT
        if query is None:
            assert found == ids(reversed(written))[:MAX_LIMIT]
