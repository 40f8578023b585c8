"""The toolbox is bound to its scope: every way a model could try to leave it fails."""

from __future__ import annotations

from typing import Any

import pytest

from recallstore import (
    ConfigurationError,
    InMemoryMemoryStore,
    MemorySearchQuery,
    MemoryStore,
    MemoryWriteInput,
    StoreUnavailableError,
)
from recallstore.context import DUPLICATE_CHECK, CallContext, current_call_context
from recallstore.records import MAX_LIMIT, MemoryHit, MemoryRecord
from recallstore.toolbox import MAX_TOOL_CONTENT_CHARS, MAX_TOOL_LIMIT, MemoryToolbox

ALICE = {"tenant": "acme", "user": "alice"}
BOB = {"tenant": "acme", "user": "bob"}
OTHER_TENANT_ALICE = {"tenant": "globex", "user": "alice"}
TENANT_WIDE = {"tenant": "acme"}


async def everything(store: MemoryStore) -> list[MemoryRecord]:
    """Every record in the store, as the host sees it."""
    hits = await store.search(
        MemorySearchQuery(include_invalidated=True, include_expired=True, limit=MAX_LIMIT)
    )
    return sorted((hit.record for hit in hits), key=lambda r: r.id)


@pytest.fixture
async def others(store: MemoryStore) -> dict[str, MemoryRecord]:
    """Records the alice toolbox must never see or touch, all mentioning 'secret plan'."""
    records = await store.write(
        [
            MemoryWriteInput(scope=BOB, content="Bob's secret plan is to move to Oslo."),
            MemoryWriteInput(scope=OTHER_TENANT_ALICE, content="Globex alice secret plan."),
            MemoryWriteInput(
                scope=TENANT_WIDE, content="Acme-wide secret plan memo.", kind="profile"
            ),
        ]
    )
    return {"bob": records[0], "globex": records[1], "tenant": records[2]}


@pytest.fixture
def alice(store: MemoryStore) -> MemoryToolbox:
    return MemoryToolbox(store, ALICE, conversation_id="conv-1", run_id="run-1", author="agent")


def assert_invalid(result: dict[str, Any], field: str) -> None:
    assert result["ok"] is False
    assert result["error"]["code"] == "invalid_arguments"
    assert field in result["error"]["fields"]
    assert field in result["error"]["message"]


async def test_save_stamps_scope_and_provenance(store: MemoryStore, alice: MemoryToolbox) -> None:
    result = await alice.call(
        "memory_save", {"content": "Likes green tea.", "kind": "preference", "tags": ["drinks"]}
    )
    assert result["ok"] is True
    record = await store.get(result["memory"]["id"])
    assert record is not None
    assert record.scope == ALICE
    assert record.provenance is not None
    assert record.provenance.model_dump() == {
        "conversation_id": "conv-1",
        "run_id": "run-1",
        "author": "agent",
    }
    assert result["memory"] == {
        "id": record.id,
        "kind": "preference",
        "content": "Likes green tea.",
        "tags": ["drinks"],
        "date": record.created_at.strftime("%Y-%m-%d"),
        "observed": None,
    }


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("memory_save", {"content": "x", "scope": BOB}),
        ("memory_save", {"content": "x", "scope": {}}),
        ("memory_search", {"query": "secret plan", "scope": BOB}),
        ("memory_search", {"query": "secret plan", "scope": {}}),
        ("memory_list", {"scope": TENANT_WIDE}),
        ("memory_invalidate", {"id": "anything", "scope": BOB}),
    ],
)
async def test_a_scope_argument_is_refused_by_name(
    store: MemoryStore,
    alice: MemoryToolbox,
    others: dict[str, MemoryRecord],
    tool: str,
    arguments: dict[str, Any],
) -> None:
    before = await everything(store)
    result = await alice.call(tool, arguments)
    assert_invalid(result, "scope")
    assert "unknown argument" in result["error"]["message"]
    assert await everything(store) == before


@pytest.mark.parametrize(
    ("tool", "arguments", "extra"),
    [
        ("memory_save", {"content": "x", "user": "bob"}, "user"),
        ("memory_save", {"content": "x", "provenance": {"author": "admin"}}, "provenance"),
        ("memory_save", {"content": "x", "tenant": "globex"}, "tenant"),
        ("memory_search", {"query": "plan", "include_invalidated": True}, "include_invalidated"),
        ("memory_list", {"user": "bob"}, "user"),
        ("memory_list", {"include_expired": True}, "include_expired"),
        ("memory_invalidate", {"id": "x", "force": True}, "force"),
    ],
)
async def test_extra_arguments_are_refused_by_name(
    store: MemoryStore, alice: MemoryToolbox, tool: str, arguments: dict[str, Any], extra: str
) -> None:
    result = await alice.call(tool, arguments)
    assert_invalid(result, extra)
    assert await everything(store) == []


async def test_extra_arguments_in_json_text_are_refused(alice: MemoryToolbox) -> None:
    result = await alice.call("memory_list", '{"scope": {"user": "bob"}}')
    assert_invalid(result, "scope")


async def test_search_and_list_never_leave_the_scope(
    alice: MemoryToolbox, others: dict[str, MemoryRecord]
) -> None:
    mine = await alice.call("memory_save", {"content": "Alice's secret plan is a garden."})
    searched = await alice.call("memory_search", {"query": "secret plan Bob Oslo Globex Acme"})
    listed = await alice.call("memory_list", {"limit": MAX_TOOL_LIMIT})
    by_kind = await alice.call("memory_list", {"kinds": ["profile", "fact"]})
    assert [m["id"] for m in searched["memories"]] == [mine["memory"]["id"]]
    assert [m["id"] for m in listed["memories"]] == [mine["memory"]["id"]]
    assert [m["id"] for m in by_kind["memories"]] == [mine["memory"]["id"]]
    for other in others.values():
        for result in (searched, listed, by_kind):
            assert other.id not in str(result)


@pytest.mark.parametrize("whose", ["bob", "globex", "tenant"])
async def test_invalidating_outside_the_scope_answers_exactly_like_a_missing_id(
    store: MemoryStore, alice: MemoryToolbox, others: dict[str, MemoryRecord], whose: str
) -> None:
    target = others[whose]
    outside = await alice.call("memory_invalidate", {"id": target.id, "reason": "pwned"})
    assert await store.get(target.id) == target  # untouched
    await store.delete(target.id)
    missing = await alice.call("memory_invalidate", {"id": target.id, "reason": "pwned"})
    assert outside == missing
    assert outside["error"]["code"] == "not_found"


@pytest.mark.parametrize("whose", ["bob", "globex", "tenant"])
async def test_superseding_outside_the_scope_answers_exactly_like_a_missing_id(
    store: MemoryStore, alice: MemoryToolbox, others: dict[str, MemoryRecord], whose: str
) -> None:
    target = others[whose]
    before = await everything(store)
    arguments = {"content": "Bob's plan was cancelled.", "supersedes": target.id}
    outside = await alice.call("memory_save", arguments)
    assert await everything(store) == before  # nothing written, target still valid
    await store.delete(target.id)
    missing = await alice.call("memory_save", arguments)
    assert outside == missing
    assert outside["error"]["code"] == "not_found"
    assert outside["error"]["fields"] == ["supersedes"]


async def test_supersede_and_invalidate_inside_the_scope(
    store: MemoryStore, alice: MemoryToolbox
) -> None:
    old = await alice.call("memory_save", {"content": "Lives in Berlin."})
    new = await alice.call(
        "memory_save", {"content": "Lives in Lisbon.", "supersedes": old["memory"]["id"]}
    )
    assert new["ok"] is True
    assert new["superseded_id"] == old["memory"]["id"]
    stored_old = await store.get(old["memory"]["id"])
    assert stored_old is not None
    assert stored_old.superseded_by == new["memory"]["id"]

    again = await alice.call(
        "memory_save", {"content": "Lives in Porto.", "supersedes": old["memory"]["id"]}
    )
    assert again["ok"] is False
    assert again["error"]["code"] == "conflict"

    gone = await alice.call("memory_invalidate", {"id": new["memory"]["id"], "reason": "moved"})
    assert gone == {"ok": True, "id": new["memory"]["id"], "invalidated": True}
    assert (await alice.call("memory_invalidate", {"id": new["memory"]["id"]}))["ok"] is True
    listed = await alice.call("memory_list", {})
    assert listed["count"] == 0


async def test_there_is_no_delete_tool(alice: MemoryToolbox) -> None:
    assert [tool.name for tool in alice.tools] == [
        "memory_save",
        "memory_search",
        "memory_list",
        "memory_invalidate",
    ]
    result = await alice.call("memory_delete", {"id": "x"})
    assert result["ok"] is False
    assert result["error"]["code"] == "unknown_tool"
    assert "memory_search" in result["error"]["message"]
    # forget(scope) is for operators (recallstore forget), never a model tool.
    forget = await alice.call("memory_forget", {})
    assert forget["error"]["code"] == "unknown_tool"


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("memory_save", {}, "content"),
        ("memory_save", {"content": 42}, "content"),
        ("memory_save", {"content": "x" * (MAX_TOOL_CONTENT_CHARS + 1)}, "content"),
        ("memory_save", {"content": "   "}, "content"),
        ("memory_save", {"content": "x", "kind": "secret"}, "kind"),
        ("memory_save", {"content": "x", "tags": "not-a-list"}, "tags"),
        ("memory_save", {"content": "x", "tags": [f"t{i}" for i in range(9)]}, "tags"),
        ("memory_search", {"query": ""}, "query"),
        ("memory_search", {"query": "   "}, "query"),
        ("memory_search", {"query": "x", "limit": MAX_TOOL_LIMIT + 1}, "limit"),
        ("memory_search", {"query": "x", "limit": 0}, "limit"),
        ("memory_list", {"limit": "ten"}, "limit"),
        ("memory_list", {"kinds": ["opinion"]}, "kinds.0"),
        ("memory_invalidate", {}, "id"),
    ],
)
async def test_bad_arguments_come_back_as_structured_errors(
    store: MemoryStore, alice: MemoryToolbox, tool: str, arguments: dict[str, Any], field: str
) -> None:
    result = await alice.call(tool, arguments)
    assert_invalid(result, field)
    assert await everything(store) == []


async def test_nul_characters_come_back_as_structured_errors(
    store: MemoryStore, alice: MemoryToolbox
) -> None:
    saved = await alice.call("memory_save", {"content": "Lives in Berlin."})
    record_id = saved["memory"]["id"]
    before = await everything(store)
    reason = await alice.call("memory_invalidate", {"id": record_id, "reason": "moved\x00away"})
    assert_invalid(reason, "reason")
    assert_invalid(await alice.call("memory_save", {"content": "a\x00b"}), "content")
    assert_invalid(await alice.call("memory_list", {"tags": ["a\x00"]}), "tags")
    for tool, arguments, field in (
        ("memory_invalidate", {"id": record_id + "\x00"}, "id"),
        ("memory_save", {"content": "x", "supersedes": "\x00" + record_id}, "supersedes"),
    ):
        result = await alice.call(tool, arguments)
        assert result["ok"] is False
        assert result["error"]["code"] == "not_found"
        assert result["error"]["fields"] == [field]
    assert await everything(store) == before


async def test_null_means_the_default(store: MemoryStore, alice: MemoryToolbox) -> None:
    result = await alice.call(
        "memory_save", {"content": "Uses vim.", "kind": None, "tags": None, "supersedes": None}
    )
    assert result["memory"]["kind"] == "fact"
    assert result["memory"]["tags"] == []
    listed = await alice.call("memory_list", {"kinds": None, "tags": None, "limit": None})
    assert listed["count"] == 1


@pytest.mark.slow
async def test_arguments_that_are_not_an_object(alice: MemoryToolbox) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    for arguments in ("[1, 2]", "{not json", 7, deep, '{"tags": ' + deep + "}"):
        result = await alice.call("memory_list", arguments)  # type: ignore[arg-type]
        assert result["ok"] is False
        assert result["error"]["code"] == "invalid_arguments"
    nested: list[Any] = []
    for _ in range(100_000):
        nested = [nested]
    assert_invalid(await alice.call("memory_list", {"tags": nested}), "tags.0")


async def test_an_empty_scope_is_refused(store: MemoryStore) -> None:
    with pytest.raises(ConfigurationError, match="non-empty scope"):
        MemoryToolbox(store, {})


class _RecordingStore(InMemoryMemoryStore):
    """A real in-memory store that notes the call context of every call."""

    def __init__(self) -> None:
        super().__init__()
        self.contexts: list[tuple[str, CallContext]] = []

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        self.contexts.append(("search", current_call_context()))
        return await super().search(query)

    async def write(self, inputs: Any) -> list[MemoryRecord]:
        self.contexts.append(("write", current_call_context()))
        return await super().write(inputs)

    async def get(self, id: str) -> MemoryRecord | None:
        self.contexts.append(("get", current_call_context()))
        return await super().get(id)

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        self.contexts.append(("invalidate", current_call_context()))
        await super().invalidate(id, reason)


async def test_every_store_call_runs_inside_the_call_context() -> None:
    async with _RecordingStore() as store:
        toolbox = MemoryToolbox(store, ALICE, conversation_id="c-9", run_id="r-9")
        saved = await toolbox.call("memory_save", {"content": "a"})
        await toolbox.call("memory_save", {"content": "b", "supersedes": saved["memory"]["id"]})
        await toolbox.call("memory_search", {"query": "b"})
        await toolbox.call("memory_list", {})
        await toolbox.call("memory_invalidate", {"id": saved["memory"]["id"]})
        calls = [name for name, _ in store.contexts]
        # A plain save looks for an equal memory first (write-time deduplication).
        assert calls == ["search", "write", "get", "write", "search", "search", "get", "invalidate"]
        expected = CallContext(conversation_id="c-9", run_id="r-9")
        check = CallContext(conversation_id="c-9", run_id="r-9", purpose=DUPLICATE_CHECK)
        assert [context for _, context in store.contexts] == [check, *[expected] * 7]
    assert current_call_context() == CallContext()


async def test_store_failures_reach_the_host() -> None:
    store = InMemoryMemoryStore()
    async with store:
        toolbox = MemoryToolbox(store, ALICE)
    with pytest.raises(StoreUnavailableError):
        await toolbox.call("memory_list", {})
