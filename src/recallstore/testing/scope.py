"""S7: the scope filter is an exact, case-sensitive subset match."""

from __future__ import annotations

import pytest

from recallstore.store import MemoryStore
from recallstore.testing._harness import StoreHarness, memory, search_ids
from recallstore.testing._rules import kit_test

__all__ = ["ScopeConformance"]


class ScopeConformance(StoreHarness):
    """Subset-match scope filters, for listings and keyword queries alike."""

    @kit_test("a record matches when its scope contains every (key, value) pair of the filter")
    @pytest.mark.parametrize("query", [None, "lighthouse"], ids=["listing", "query"])
    async def test_s7_tenant_filter_finds_tenant_wide_and_per_user_records(
        self, store: MemoryStore, query: str | None
    ) -> None:
        tenant_wide, user_one, user_two, *_elsewhere = await store.write(
            [
                memory("lighthouse policy for everyone", scope={"tenant": "acme"}),
                memory("lighthouse note of u1", scope={"tenant": "acme", "user": "u1"}),
                memory("lighthouse note of u2", scope={"tenant": "acme", "user": "u2"}),
                memory("lighthouse at globex", scope={"tenant": "globex", "user": "u1"}),
                memory("lighthouse with no scope", scope={}),
                memory("lighthouse without tenant", scope={"user": "u1"}),
            ]
        )
        found = await search_ids(store, query, scope={"tenant": "acme"})
        assert set(found) == {tenant_wide.id, user_one.id, user_two.id}

    @kit_test("scope={} is no filter: it matches records of every scope")
    async def test_s7_empty_scope_filter_matches_every_record(self, store: MemoryStore) -> None:
        written = await store.write(
            [
                memory("unscoped harbour", scope={}),
                memory("tenant harbour", scope={"tenant": "acme"}),
                memory("user harbour", scope={"tenant": "acme", "user": "u9"}),
            ]
        )
        expected = {record.id for record in written}
        assert set(await search_ids(store, scope={})) == expected
        assert set(await search_ids(store, "harbour", scope={})) == expected

    @kit_test("a filter key the record lacks excludes it")
    async def test_s7_filter_key_missing_from_the_record_does_not_match(
        self, store: MemoryStore
    ) -> None:
        _tenant_wide, personal = await store.write(
            [
                memory("tenant wide rule", scope={"tenant": "acme"}),
                memory("personal rule", scope={"tenant": "acme", "user": "u1"}),
            ]
        )
        user_filter = {"tenant": "acme", "user": "u1"}
        assert await search_ids(store, scope=user_filter) == [personal.id]
        assert await search_ids(store, "rule", scope=user_filter) == [personal.id]

    @kit_test("compare scope values exactly (no case folding, trimming, prefixes or LIKE)")
    @pytest.mark.parametrize(
        "filter_value",
        ["Acme", "ACME", "acm", "acme2", " acme", "acme ", "ac%", "ac_e", "a*", "%", "_" * 4],
    )
    async def test_s7_scope_values_are_exact_and_case_sensitive(
        self, store: MemoryStore, filter_value: str
    ) -> None:
        await store.write(
            [
                memory("scoped beacon", scope={"tenant": "acme"}),
                memory("scoped beacon two", scope={"tenant": "acme", "user": "u1"}),
            ]
        )
        assert await search_ids(store, scope={"tenant": filter_value}) == []
        assert await search_ids(store, "beacon", scope={"tenant": filter_value}) == []

    @kit_test("match (key, value) pairs, not values alone")
    async def test_s7_scope_keys_are_not_interchangeable(self, store: MemoryStore) -> None:
        await write_pair(store)
        assert await search_ids(store, scope={"user": "acme"}) == []
        assert await search_ids(store, scope={"Tenant": "acme"}) == []
        assert await search_ids(store, scope={"tenant": "u1"}) == []

    @kit_test("match scope pairs structurally, never against serialised JSON text")
    async def test_s7_scope_values_are_not_matched_as_serialised_text(
        self, store: MemoryStore
    ) -> None:
        await store.write([memory("two key record", scope={"tenant": "a", "user": "b"})])
        sneaky = [
            {"tenant": 'a","user":"b'},
            {"tenant": "a', 'user': 'b"},
            {"tenant": "a,user=b"},
            {"tenant": "a&user=b"},
            {"tenant": "a\x1fuser\x1fb"},
        ]
        for scope in sneaky:
            assert await search_ids(store, scope=scope) == [], scope

    @kit_test("compare unicode scope values without normalising them")
    async def test_s7_unicode_scope_values_match_exactly(self, store: MemoryStore) -> None:
        (record,) = await store.write([memory("unicode scoped", scope={"user": "Zoë 東京 🙂"})])
        assert await search_ids(store, scope={"user": "Zoë 東京 🙂"}) == [record.id]
        assert await search_ids(store, scope={"user": "Zoe 東京 🙂"}) == []
        assert await search_ids(store, scope={"user": "zoë 東京 🙂"}) == []

    @kit_test("return scope with its keys sorted, as the contract builds it")
    async def test_s7_scope_is_returned_with_keys_sorted(self, store: MemoryStore) -> None:
        (record,) = await store.write(
            [memory("sorted scope", scope={"user": "u1", "tenant": "acme", "app": "x"})]
        )
        stored = await store.get(record.id)
        assert stored is not None
        assert list(stored.scope.items()) == [("app", "x"), ("tenant", "acme"), ("user", "u1")]


async def write_pair(store: MemoryStore) -> None:
    """A tenant-wide and a per-user record of tenant ``acme``."""
    await store.write(
        [
            memory("tenant record", scope={"tenant": "acme"}),
            memory("user record", scope={"tenant": "acme", "user": "u1"}),
        ]
    )
