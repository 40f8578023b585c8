"""S14: invalid input fails with a validation error naming the field, and writes nothing.

Validation happens once, when the input models are built; these tests pin that the
error names the field, that nothing reaches the store, and that the store accepts
every value the contract allows without truncating it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from recallstore.errors import MemoryNotFoundError, MemoryValidationError
from recallstore.records import (
    MAX_CONTENT_CHARS,
    MAX_REASON_CHARS,
    MAX_SCOPE_KEYS,
    MAX_SCOPE_PART_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MemorySearchQuery,
    MemoryWriteInput,
)
from recallstore.store import MemoryStore
from recallstore.testing._harness import StoreHarness, every_record, memory, write_one
from recallstore.testing._rules import kit_test

__all__ = ["ValidationConformance"]


def _write(field: str, id: str, **fields: Any) -> object:
    return pytest.param({"scope": {}, "content": "valid content", **fields}, field, id=id)


_INVALID_WRITES = [
    _write("content", "empty-content", content=""),
    _write("content", "whitespace-content", content=" \n\t "),
    _write("content", "oversized-content", content="x" * (MAX_CONTENT_CHARS + 1)),
    _write("content", "nul-in-content", content="a\x00b"),
    _write("content", "non-string-content", content=123),
    # A lone surrogate is what json.loads makes of "\\ud800"; no SQL backend can store it.
    _write("content", "lone-surrogate-in-content", content="a\ud800b"),
    _write("scope", "lone-surrogate-in-scope-value", scope={"user": "\udc00"}),
    _write("tags", "lone-surrogate-in-tag", tags=["a\ud800"]),
    _write("payload", "nul-in-payload", payload={"note": ["a\x00b"]}),
    _write("payload", "lone-surrogate-in-payload-key", payload={"\ud800": 1}),
    _write("provenance", "nul-in-provenance", provenance={"conversation_id": "c\x00"}),
    _write("supports", "nul-in-supports", supports=[{"author": "\x00"}]),
    _write("target", "nul-in-target", target={"section": "s", "key": "k\x00"}),
    _write("kind", "unknown-kind", kind="opinion"),
    _write("kind", "kind-wrong-case", kind="Fact"),
    _write("scope", "integer-scope-value", scope={"user": 42}),
    _write("scope", "none-scope-value", scope={"user": None}),
    _write("scope", "list-scope-value", scope={"user": ["u1"]}),
    _write("scope", "empty-scope-key", scope={"": "u1"}),
    _write("scope", "whitespace-scope-key", scope={"  ": "u1"}),
    _write("scope", "non-string-scope-key", scope={1: "u1"}),
    _write("scope", "scope-not-a-mapping", scope=[("user", "u1")]),
    _write("scope", "too-many-scope-keys", scope={f"k{n}": "v" for n in range(MAX_SCOPE_KEYS + 1)}),
    _write("scope", "oversized-scope-value", scope={"user": "u" * (MAX_SCOPE_PART_CHARS + 1)}),
    _write("tags", "blank-tag", tags=["  "]),
    _write("tags", "non-string-tag", tags=[7]),
    _write("tags", "tags-as-one-string", tags="travel"),
    _write("tags", "too-many-tags", tags=[f"t{n}" for n in range(MAX_TAGS + 1)]),
    _write("tags", "oversized-tag", tags=["t" * (MAX_TAG_CHARS + 1)]),
    _write("expires_at", "naive-expires-at", expires_at=datetime(2030, 1, 1)),
    _write("supersedes", "empty-supersedes", supersedes=""),
    _write("colour", "unknown-field", colour="red"),
]

_INVALID_QUERIES = [
    pytest.param({"limit": -1}, "limit", id="negative-limit"),
    pytest.param({"limit": 1001}, "limit", id="oversized-limit"),
    pytest.param({"kinds": ["opinion"]}, "kinds", id="unknown-kind"),
    pytest.param({"scope": {"tenant": 1}}, "scope", id="integer-scope-value"),
    pytest.param({"scope": {"": "x"}}, "scope", id="empty-scope-key"),
    pytest.param({"tags": [""]}, "tags", id="blank-tag"),
    pytest.param({"query": "q" * (MAX_CONTENT_CHARS + 1)}, "query", id="oversized-query"),
    pytest.param({"include_invalidated": "maybe"}, "include_invalidated", id="non-bool-flag"),
]


class ValidationConformance(StoreHarness):
    """Bad input is refused at the edge; valid extremes are stored without loss."""

    @kit_test(
        "the contract models refuse bad input; the store must accept what they allow and not "
        "write a partial batch"
    )
    @pytest.mark.parametrize(("fields", "field"), _INVALID_WRITES)
    async def test_s14_invalid_write_input_names_the_field_and_writes_nothing(
        self, store: MemoryStore, fields: dict[str, Any], field: str
    ) -> None:
        await write_one(store, "existing record")
        before = await every_record(store)
        with pytest.raises(MemoryValidationError) as caught:
            await store.write([memory("valid neighbour"), MemoryWriteInput(**fields)])
        assert caught.value.field.split(".")[0] == field
        assert await every_record(store) == before

    @kit_test("MemorySearchQuery refuses bad queries before the store sees them")
    @pytest.mark.parametrize(("fields", "field"), _INVALID_QUERIES)
    async def test_s14_invalid_search_query_names_the_field(
        self, store: MemoryStore, fields: dict[str, Any], field: str
    ) -> None:
        await write_one(store, "existing record")
        before = await every_record(store)
        with pytest.raises(MemoryValidationError) as caught:
            await store.search(MemorySearchQuery(**fields))
        assert caught.value.field.split(".")[0] == field
        assert await every_record(store) == before

    @kit_test("validate every supersedes target before writing the first record")
    async def test_s14_batch_whose_last_item_supersedes_a_missing_record_writes_none_of_it(
        self, store: MemoryStore
    ) -> None:
        await write_one(store, "existing record")
        before = await every_record(store)
        batch = [memory(f"valid item {n}") for n in range(5)]
        batch.append(memory("points nowhere", supersedes="missing-record"))
        with pytest.raises(MemoryNotFoundError):
            await store.write(batch)
        assert await every_record(store) == before

    @kit_test("store content, scope and tags at their maximum sizes without truncating")
    async def test_s14_values_at_every_limit_are_stored_without_loss(
        self, store: MemoryStore
    ) -> None:
        scope = {f"key{n:02d}": "v" * MAX_SCOPE_PART_CHARS for n in range(MAX_SCOPE_KEYS - 1)}
        scope["k" * MAX_SCOPE_PART_CHARS] = "東" * MAX_SCOPE_PART_CHARS
        tags = [f"{n:02d}" + "t" * (MAX_TAG_CHARS - 2) for n in range(MAX_TAGS)]
        records = await store.write(
            [
                memory("a" * MAX_CONTENT_CHARS, scope=scope, tags=tags),
                memory("🙂" * MAX_CONTENT_CHARS),
                memory("東京" * (MAX_CONTENT_CHARS // 2), kind="profile"),
            ]
        )
        for record in records:
            stored = await store.get(record.id)
            assert stored == record
            assert stored is not None
            assert len(stored.content) == MAX_CONTENT_CHARS
        assert await store.search(MemorySearchQuery(scope=scope, tags=tags)) != []

    @pytest.mark.parametrize(
        "reason",
        [
            pytest.param("x" * (MAX_REASON_CHARS + 1), id="oversized-reason"),
            pytest.param("moved\x00away", id="nul-in-reason"),
        ],
    )
    @kit_test("call check_invalid_reason(reason) before touching the record")
    async def test_s14_invalid_invalidation_reason_names_the_field_and_changes_nothing(
        self, store: MemoryStore, reason: str
    ) -> None:
        record = await write_one(store, "lives in Lyon")
        with pytest.raises(MemoryValidationError) as caught:
            await store.invalidate(record.id, reason)
        assert caught.value.field == "reason"
        assert await store.get(record.id) == record
        await store.invalidate(record.id, "r" * MAX_REASON_CHARS)
        stored = await store.get(record.id)
        assert stored is not None
        assert stored.invalid_reason == "r" * MAX_REASON_CHARS

    @kit_test("an id that is not a string is a MemoryValidationError on id, never a TypeError")
    @pytest.mark.parametrize(
        "bad_id",
        [
            pytest.param(None, id="none"),
            pytest.param(["a"], id="list"),
            pytest.param(42, id="int"),
            pytest.param({"id": "x"}, id="dict"),
        ],
    )
    async def test_s14_an_id_that_is_not_a_string_names_the_field(
        self, store: MemoryStore, bad_id: Any
    ) -> None:
        record = await write_one(store, "lives in Lyon")
        for call in (store.get, store.delete, store.invalidate):
            with pytest.raises(MemoryValidationError) as caught:
                await call(bad_id)
            assert caught.value.field == "id", call.__name__
        assert await every_record(store) == [record]
