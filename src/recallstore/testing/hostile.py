"""S13: any user text is safe as a query — FTS syntax, SQL, control characters, any script.

A table of hostile strings runs against a small corpus. Each query must not raise;
on keyword backends its results must only be records sharing a word with it, and a
hostile query that carries a real word must still find the record with that word.
"""

from __future__ import annotations

import pytest

from recallstore.records import MAX_CONTENT_CHARS, MemoryRecord
from recallstore.store import MemoryStore, tokenize
from recallstore.testing._harness import (
    StoreHarness,
    memory,
    search,
    search_ids,
    write_fillers,
    write_one,
)
from recallstore.testing._rules import kit_test

__all__ = ["HOSTILE_QUERIES", "HostileQueryConformance"]

_CORPUS = {
    "copper": "copper kettle whistles",
    "violin": "violin lesson every tuesday",
    "tokyo": "東京 旅行 plans",
    "party": "birthday party 🎉 celebration",
    "hebrew": "שלום greeting card",
}


def _case(query: str, id: str, *must_find: str) -> object:
    return pytest.param(query, must_find, id=id)


HOSTILE_QUERIES = [
    _case('"', "lone-double-quote"),
    _case("'", "lone-single-quote"),
    _case('""', "empty-phrase"),
    _case('"""', "triple-quote"),
    _case("''''", "single-quotes"),
    _case('"copper', "unbalanced-quote-before-word", "copper"),
    _case('copper"', "unbalanced-quote-after-word", "copper"),
    _case('"copper kettle', "unterminated-phrase", "copper"),
    _case('copper"kettle', "quote-inside-word", "copper"),
    _case("'copper'", "single-quoted-word", "copper"),
    _case("*", "star"),
    _case("*" * 100, "many-stars"),
    _case("copper*", "prefix-star", "copper"),
    _case("*copper", "leading-star", "copper"),
    _case("NEAR(", "near-open"),
    _case('NEAR("copper" "kettle", 3)', "near-group", "copper"),
    _case("NEAR(copper violin)", "near-two-records", "copper", "violin"),
    _case("copper NEAR/2 kettle", "near-slash", "copper"),
    _case("-", "lone-minus"),
    _case("-copper", "minus-word", "copper"),
    _case("copper -kettle", "minus-second-word", "copper"),
    _case("col:term", "column-filter"),
    _case("content:copper", "content-column-filter", "copper"),
    _case("scope:violin", "scope-column-filter", "violin"),
    _case("{content scope}: copper", "column-set", "copper"),
    _case(":", "lone-colon"),
    _case("copper:", "trailing-colon", "copper"),
    _case("(", "open-paren"),
    _case(")", "close-paren"),
    _case("(copper", "unbalanced-open-paren", "copper"),
    _case("copper)", "unbalanced-close-paren", "copper"),
    _case("((()))", "nested-parens"),
    _case("AND", "and"),
    _case("OR", "or"),
    _case("NOT", "not"),
    _case("a AND OR b", "and-or"),
    _case("AND AND AND", "and-and-and"),
    _case("copper AND", "trailing-and", "copper"),
    _case("OR violin", "leading-or", "violin"),
    _case("NOT copper", "not-word", "copper"),
    _case("copper NOT kettle", "word-not-word", "copper"),
    _case("copper OR violin", "word-or-word", "copper", "violin"),
    _case("^", "caret"),
    _case("^copper", "caret-word", "copper"),
    _case("+", "plus"),
    _case("+copper +kettle", "plus-words", "copper"),
    _case("~copper", "tilde-word", "copper"),
    _case("@#$%^&*()", "punctuation-soup"),
    _case("!!!?...", "only-punctuation"),
    _case("\x00", "nul"),
    _case("copper\x00kettle", "nul-inside", "copper"),
    _case("\x1b[31m copper \x1b[0m", "ansi-escape", "copper"),
    _case("\u200b", "zero-width-space"),
    _case("\ud800", "lone-surrogate"),
    _case("copper\ud800", "word-and-lone-surrogate", "copper"),
    _case("🎉", "emoji"),
    _case("🎉 copper", "emoji-and-word", "copper"),
    _case("👩‍👩‍👧‍👦", "emoji-zwj-sequence"),
    _case("東京", "cjk", "tokyo"),
    _case("旅行について", "cjk-sentence"),
    _case("שלום עולם", "rtl-hebrew", "hebrew"),
    _case("مرحبا بالعالم", "rtl-arabic"),
    _case("\u202ecopper", "rtl-override", "copper"),
    _case("e\u0301\u0301\u0301", "combining-marks"),
    _case("'); DROP TABLE memory_records; --", "sql-drop-table"),
    _case("' OR '1'='1", "sql-tautology"),
    _case("copper' OR 1=1 --", "sql-tautology-with-word", "copper"),
    _case("copper; DELETE FROM memory_records", "sql-delete", "copper"),
    _case("\\", "backslash"),
    _case("\\copper\\", "backslashed-word", "copper"),
    _case("%", "like-percent"),
    _case("_", "like-underscore"),
    _case("%copper%", "like-wrapped-word", "copper"),
    _case("c_pper", "like-single-char-wildcard"),
    _case("c%", "like-prefix"),
    _case("\t\n \r", "only-whitespace"),
    _case("copper " * 2000, "very-long-repeated-word", "copper"),
    _case("x" * MAX_CONTENT_CHARS, "maximum-length-token"),
    _case("(" * 5000, "many-open-parens"),
    _case("violin " + " ".join(f"word{n}" for n in range(1500)), "many-terms", "violin"),
]
"""The S13 table: ``(query, names of corpus records it must find)``, with readable ids."""


class HostileQueryConformance(StoreHarness):
    """Hostile query text never raises and never matches more than its words allow."""

    @kit_test(
        "build the query from words (recallstore.store.query_terms), quote each, never pass "
        "user text to the query language"
    )
    @pytest.mark.parametrize(("query", "must_find"), HOSTILE_QUERIES)
    async def test_s13_hostile_query_never_raises_and_matches_only_its_words(
        self, store: MemoryStore, query: str, must_find: tuple[str, ...]
    ) -> None:
        await write_fillers(store, 10)
        corpus = {
            name: record
            for name, record in zip(
                _CORPUS, await store.write([memory(text) for text in _CORPUS.values()]), strict=True
            )
        }
        hits = await search(store, query, limit=1000)
        found = {hit.record.id for hit in hits}
        assert len(found) == len(hits)
        if store.capabilities().search != "keyword":
            return
        if not query.strip():
            assert len(found) == 10 + len(_CORPUS)  # a blank query is a listing
            return
        allowed = {record.id for record in corpus.values() if _shares_a_word(record, query)}
        assert found <= allowed
        assert {corpus[name].id for name in must_find} <= found

    @kit_test(
        "store content unchanged and index it by its words; bind values, never interpolate them"
    )
    async def test_s13_hostile_text_is_stored_verbatim_and_found_by_its_words(
        self, store: MemoryStore
    ) -> None:
        content = (
            'He said "NEAR(" AND * - OR NOT : ( ) ^ ~ \' ; DROP TABLE notes; -- %_ \\ 🎉 東京 '
            "{col}: x* \u202e"
        )
        record = await write_one(store, content, tags=["'; --", "%"], scope={"user": '"); --'})
        assert record.content == content.strip()
        assert await store.get(record.id) == record
        if store.capabilities().search == "keyword":
            assert await search_ids(store, "drop") == [record.id]
            assert await search_ids(store, "NEAR(") == [record.id]
            assert await search_ids(store, '"东京" OR "東京"') == [record.id]

    @kit_test(
        "compare scope values and tags as bound parameters, never as LIKE patterns or SQL text"
    )
    async def test_s13_hostile_strings_in_scope_and_tags_are_plain_data(
        self, store: MemoryStore
    ) -> None:
        hostile = ["'); DROP TABLE memory_records; --", "%", "_", "*", '"', "\\", "a' OR 'a'='a"]
        written = await store.write(
            [
                memory(f"hostile scope {n}", scope={"user": v}, tags=[v])
                for n, v in enumerate(hostile)
            ]
        )
        for value, record in zip(hostile, written, strict=True):
            assert await search_ids(store, scope={"user": value}) == [record.id]
            assert await search_ids(store, tags=[value]) == [record.id]
            assert await search_ids(store, "hostile", scope={"user": value}) == [record.id]
        assert await search_ids(store, scope={"user": "anything"}) == []


def _shares_a_word(record: MemoryRecord, query: str) -> bool:
    return bool(set(tokenize(record.content)) & set(tokenize(query)))
