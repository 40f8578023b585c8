"""S10 (listing by recency, relevance otherwise) and S11 (ranking behaviour, not scores).

Every corpus here pads the records under test with filler records, so the compared
terms are rare: any reasonable keyword ranker, including FTS5's bm25 (which floors
the idf of terms found in over half the documents), must order them as asserted.
"""

from __future__ import annotations

import pytest

from recallstore.store import MemoryStore
from recallstore.testing._harness import (
    StoreHarness,
    hours_from_now,
    memory,
    search,
    search_ids,
    write_fillers,
    write_one,
)
from recallstore.testing._rules import kit_test

__all__ = ["KeywordSearchConformance", "OrderingConformance"]

_FILLERS = 20


class OrderingConformance(StoreHarness):
    """Recency listings and relevance ranking, observed only through result order."""

    @kit_test("a listing orders by created_at descending")
    async def test_s10_listing_is_newest_first(self, store: MemoryStore) -> None:
        first = await write_one(store, "written first")
        second = await write_one(store, "written second")
        third = await write_one(store, "written third")
        assert await search_ids(store) == [third.id, second.id, first.id]

    @kit_test("order listings by (created_at, id) descending")
    async def test_s10_listing_order_follows_created_at_then_id(self, store: MemoryStore) -> None:
        for batch in range(3):
            await store.write([memory(f"batch {batch} item {n}") for n in range(10)])
        listed = [hit.record for hit in await search(store, limit=100)]
        assert len(listed) == 30
        expected = sorted(listed, key=lambda record: (record.created_at, record.id), reverse=True)
        assert listed == expected
        assert listed[0].content.startswith("batch 2")
        assert listed[-1].content.startswith("batch 0")

    @kit_test(
        "a query that is None or only whitespace (MemorySearchQuery.is_listing) is a listing with "
        "score None"
    )
    @pytest.mark.parametrize(
        "blank",
        [None, "", " ", "\n\t  ", "\u3000", "\u00a0\u2028", "\x1f\x85"],
        ids=["none", "empty", "space", "ws", "ideo", "nbsp-line-separator", "c0-c1-separators"],
    )
    async def test_s10_blank_query_is_a_recency_listing(
        self, store: MemoryStore, blank: str | None
    ) -> None:
        older = await write_one(store, "an older note")
        newer = await write_one(store, "a newer note")
        hits = await search(store, blank)
        assert [hit.record.id for hit in hits] == [newer.id, older.id]
        assert [hit.score for hit in hits] == [None, None]

    @kit_test("break ranking ties by created_at desc, then id desc")
    async def test_s10_equal_relevance_is_broken_by_recency(
        self, keyword_store: MemoryStore
    ) -> None:
        await write_fillers(keyword_store, _FILLERS)
        oldest = await write_one(keyword_store, "copper kettle")
        middle = await write_one(keyword_store, "copper kettle")
        newest = await write_one(keyword_store, "copper kettle")
        assert await search_ids(keyword_store, "copper") == [newest.id, middle.id, oldest.id]
        assert await search_ids(keyword_store, "kettle copper") == [newest.id, middle.id, oldest.id]

    @kit_test("weight each term by its rarity (idf) over every stored record")
    async def test_s11_rarer_term_ranks_above_commoner_term(
        self, keyword_store: MemoryStore
    ) -> None:
        await write_fillers(keyword_store, _FILLERS)
        rare = await write_one(keyword_store, "zircon quartz mica")
        common = await keyword_store.write(
            [memory(f"basalt {pair}") for pair in ("shale flint", "chalk loam", "slate tuff")]
        )
        found = await search_ids(keyword_store, "zircon basalt")
        assert found[0] == rare.id
        assert set(found) == {rare.id, *(record.id for record in common)}

    @kit_test("sum the contribution of every matching query term")
    async def test_s11_more_matching_terms_rank_higher(self, keyword_store: MemoryStore) -> None:
        await write_fillers(keyword_store, _FILLERS)
        all_three = await write_one(keyword_store, "zircon basalt gneiss quartz")
        two = await write_one(keyword_store, "zircon basalt mica shale")
        one_a = await write_one(keyword_store, "zircon quartz mica shale")
        one_b = await write_one(keyword_store, "basalt quartz mica shale")
        found = await search_ids(keyword_store, "zircon basalt gneiss")
        assert found[:2] == [all_three.id, two.id]
        assert set(found[2:]) == {one_a.id, one_b.id}

    @kit_test(
        "index and query the same words: recallstore.store.tokenize folds case and drops "
        "punctuation"
    )
    async def test_s11_case_and_punctuation_do_not_change_results(
        self, keyword_store: MemoryStore
    ) -> None:
        await write_fillers(keyword_store, _FILLERS)
        await keyword_store.write(
            [
                memory("Zircon, BASALT! and more"),
                memory("(zircon)"),
                memory("basalt... maybe?"),
                memory("Gneiss: zircon-basalt"),
            ]
        )
        expected = await search_ids(keyword_store, "zircon basalt")
        assert len(expected) == 4
        for variant in (
            "ZIRCON Basalt",
            "zircon, basalt!",
            "...Zircon?...BASALT",
            "(zircon) basalt",
        ):
            assert await search_ids(keyword_store, variant) == expected, variant


class KeywordSearchConformance(StoreHarness):
    """Sub-suite for ``capabilities().search == "keyword"``: only matching records come back."""

    @kit_test("keyword search returns only records containing at least one query token")
    async def test_s10_keyword_search_returns_only_records_sharing_a_query_term(
        self, keyword_store: MemoryStore
    ) -> None:
        await write_fillers(keyword_store, _FILLERS)
        hit_a, hit_b, _miss = await keyword_store.write(
            [memory("walrus colony"), memory("kelp forest walrus"), memory("sea otter raft")]
        )
        assert set(await search_ids(keyword_store, "walrus penguin")) == {hit_a.id, hit_b.id}
        assert await search_ids(keyword_store, "penguin iceberg") == []

    @kit_test("a non-blank query without word tokens returns [], not a listing")
    @pytest.mark.parametrize(
        "wordless", ["!!!", "🎉🎉", "() * -", "...", '""', "-- ;", "\x00"], ids=repr
    )
    async def test_s10_query_without_word_tokens_returns_nothing(
        self, keyword_store: MemoryStore, wordless: str
    ) -> None:
        await keyword_store.write([memory("a plain record"), memory("party 🎉 time !!!")])
        assert await search_ids(keyword_store, wordless) == []

    @kit_test(
        "blank means str.strip() leaves nothing; zero-width and format characters are not "
        "whitespace, so such a query is a keyword query without words"
    )
    @pytest.mark.parametrize(
        "invisible", ["\u200b", "\ufeff", "\u2060", " \u200b "], ids=["zwsp", "bom", "wj", "mixed"]
    )
    async def test_s10_zero_width_query_is_not_blank_and_matches_nothing(
        self, keyword_store: MemoryStore, invisible: str
    ) -> None:
        await keyword_store.write([memory("a plain record"), memory("another plain record")])
        assert await search_ids(keyword_store, invisible) == []

    @kit_test(
        "count a term's document frequency over every stored record — other scopes, "
        "invalidated and expired records included — not only over the filtered ones"
    )
    @pytest.mark.parametrize("common_where", ["other-scope", "invalidated", "expired"])
    async def test_s11_term_rarity_counts_every_stored_record(
        self, keyword_store: MemoryStore, common_where: str
    ) -> None:
        await write_fillers(keyword_store, _FILLERS, scope={"user": "elsewhere"})
        mine = {"user": "me"}
        rare = await write_one(keyword_store, "zircon mica", scope=mine)
        common = await write_one(keyword_store, "basalt mica", scope=mine)
        # Eight more records carry "basalt", outside what the query below can return.
        others = await keyword_store.write(
            [
                memory(
                    f"basalt {word}",
                    scope={"user": "elsewhere"} if common_where == "other-scope" else mine,
                    expires_at=hours_from_now(-1) if common_where == "expired" else None,
                )
                for word in ("shale", "flint", "chalk", "loam", "slate", "tuff", "gneiss", "tin")
            ]
        )
        if common_where == "invalidated":
            for record in others:
                await keyword_store.invalidate(record.id)
        # Among the two visible records both terms occur once; only the whole store makes
        # "zircon" the rarer term. Recency alone would put the newer record first.
        assert await search_ids(keyword_store, "zircon basalt", scope=mine) == [rare.id, common.id]

    @kit_test("match whole tokens, never substrings")
    async def test_s11_terms_match_whole_words_not_substrings(
        self, keyword_store: MemoryStore
    ) -> None:
        await write_fillers(keyword_store, _FILLERS)
        whole = await write_one(keyword_store, "the cat sleeps")
        await keyword_store.write(
            [memory("concatenate strings"), memory("scatter plot"), memory("catalog")]
        )
        assert await search_ids(keyword_store, "cat") == [whole.id]
