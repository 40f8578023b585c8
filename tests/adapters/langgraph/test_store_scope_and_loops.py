"""The adapter's scope never leaks, and its sync and async calls find the store's loop."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from tests.adapters.langgraph.conftest import FIELDS

from recallstore.adapters.langgraph import ITEM_SECTION, LangGraphStore
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.errors import ConfigurationError
from recallstore.records import MemorySearchQuery, MemoryTarget, MemoryWriteInput
from recallstore.store import EXPORT_EXTENSION, IDEMPOTENCY_EXTENSION
from recallstore.sync import SyncMemoryStore


def test_a_namespace_never_leaves_the_store_scope(backend_store: SyncMemoryStore) -> None:
    acme = LangGraphStore(backend_store, namespace_fields=("user",), scope={"tenant": "acme"})
    other = LangGraphStore(backend_store, namespace_fields=("user",), scope={"tenant": "other"})
    acme.put(("u1",), "city", {"content": "Lisbon"})
    # A label that looks like scope text is one value, not more scope.
    acme.put(("u2,tenant=other",), "city", {"content": "Porto"})
    assert other.search(()) == []
    assert other.list_namespaces() == []
    assert other.get(("u1",), "city") is None
    assert acme.list_namespaces() == [("u1",), ("u2,tenant=other",)]
    (record,) = acme.history(("u2,tenant=other",), "city")
    assert record.scope == {"tenant": "acme", "user": "u2,tenant=other"}
    with pytest.raises(ConfigurationError, match="fixed by the base scope"):
        LangGraphStore(backend_store, namespace_fields=("tenant",), scope={"tenant": "acme"})


def test_only_items_of_this_mapping_are_items(backend_store: SyncMemoryStore) -> None:
    lg_store = LangGraphStore(backend_store, namespace_fields=FIELDS, scope={"tenant": "acme"})
    backend_store.write(
        [
            # A toolbox memory in the same scope (no item target) and an item of a scope
            # with a field outside the mapping: neither is an item here.
            MemoryWriteInput(scope={"tenant": "acme", "ns0": "docs"}, content="tea"),
            MemoryWriteInput(
                scope={"tenant": "acme", "ns0": "docs", "agent": "x"},
                content="tea",
                target=MemoryTarget(section=ITEM_SECTION, key="k"),
            ),
        ]
    )
    lg_store.put(("docs",), "k", {"content": "tea"})
    assert [(i.namespace, i.key) for i in lg_store.search(("docs",), query="tea")] == [
        (("docs",), "k")
    ]
    assert lg_store.list_namespaces() == [("docs",)]
    # The store's own search sees all three: the items are plain records.
    hits = backend_store.search(MemorySearchQuery(scope={"tenant": "acme"}, query="tea"))
    assert len(hits) == 3


def test_async_calls_on_a_sync_store_run_on_its_loop(backend_store: SyncMemoryStore) -> None:
    lg_store = LangGraphStore(backend_store, namespace_fields=FIELDS)

    async def conversation() -> None:
        await lg_store.aput(("users", "u1"), "tea", {"content": "likes green tea"})
        await lg_store.aput(("users", "u1"), "tea", {"content": "likes black tea"})
        item = await lg_store.aget(("users", "u1"), "tea")
        assert item is not None
        assert item.value == {"content": "likes black tea"}
        hits = await lg_store.asearch(("users",), query="tea")
        assert [hit.key for hit in hits] == ["tea"]
        assert await lg_store.alist_namespaces() == [("users", "u1")]
        assert len(await lg_store.ahistory(("users", "u1"), "tea")) == 2
        await lg_store.adelete(("users", "u1"), "tea")

    asyncio.run(conversation())
    assert lg_store.get(("users", "u1"), "tea") is None


async def test_an_async_store_serves_async_calls_and_other_threads(
    store: SqliteMemoryStore,
) -> None:
    lg_store = LangGraphStore(store, namespace_fields=FIELDS)
    await lg_store.aput(("users", "u1"), "city", {"content": "Lisbon"})
    # Sync calls from a worker thread run on this loop (as LangGraph runs sync nodes).
    item = await asyncio.to_thread(lg_store.get, ("users", "u1"), "city")
    assert item is not None
    assert item.value == {"content": "Lisbon"}
    await asyncio.to_thread(lg_store.put, ("users", "u1"), "city", {"content": "Porto"})
    assert [r.content for r in await lg_store.ahistory(("users", "u1"), "city")] == [
        "Lisbon",
        "Porto",
    ]
    # On the loop itself a sync call would block it: refused, naming the way out.
    with pytest.raises(ConfigurationError, match="aput, aget"):
        lg_store.get(("users", "u1"), "city")
    with pytest.raises(ConfigurationError, match="ahistory"):
        lg_store.history(("users", "u1"), "city")


async def test_a_sync_tool_in_an_async_run_finds_the_loop_the_adapter_was_built_on(
    store: SqliteMemoryStore,
) -> None:
    # No async call came first: the thread's sync put goes to the loop of the constructor.
    lg_store = LangGraphStore(store, namespace_fields=FIELDS)
    await asyncio.to_thread(lg_store.put, ("users", "u1"), "city", {"content": "Lisbon"})
    item = await lg_store.aget(("users", "u1"), "city")
    assert item is not None
    assert item.value == {"content": "Lisbon"}


def test_a_sync_call_without_any_loop_is_refused() -> None:
    lg_store = LangGraphStore(InMemoryMemoryStore(), namespace_fields=FIELDS)
    with pytest.raises(ConfigurationError, match="SyncMemoryStore"):
        lg_store.put(("users",), "k", {"content": "x"})


class _PlainStore(InMemoryMemoryStore):
    """The reference backend without the optional extensions the adapter can use."""

    extensions = InMemoryMemoryStore.extensions - {IDEMPOTENCY_EXTENSION, EXPORT_EXTENSION}


def test_a_store_without_idempotency_or_export_keeps_the_same_rules() -> None:
    with SyncMemoryStore(_PlainStore()) as plain:
        lg_store = LangGraphStore(plain, namespace_fields=FIELDS)
        lg_store.put(("users", "u1"), "city", {"content": "Porto"})
        lg_store.put(("users", "u1"), "city", {"content": "Lisbon"})
        lg_store.put(("users", "u2"), "city", {"content": "Braga"})
        old, new = lg_store.history(("users", "u1"), "city")
        assert (old.superseded_by, new.invalid_at) == (new.id, None)
        assert new.idempotency_key is None
        assert lg_store.list_namespaces() == [("users", "u1"), ("users", "u2")]
        lg_store.delete(("users", "u1"), "city")
        assert lg_store.list_namespaces() == [("users", "u2")]


def test_concurrent_puts_of_one_key_leave_one_current_version(
    backend_store: SyncMemoryStore,
) -> None:
    lg_store = LangGraphStore(backend_store, namespace_fields=FIELDS)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda n: lg_store.put(("race",), "k", {"content": f"v{n}"}), range(16)))
    versions = lg_store.history(("race",), "k")
    assert len(versions) == 16
    current = [v for v in versions if v.invalid_at is None]
    assert len(current) == 1
    # One chain: each earlier version superseded by the next, none forked.
    assert [v.superseded_by for v in versions[:-1]] == [v.id for v in versions[1:]]
    item = lg_store.get(("race",), "k")
    assert item is not None
    assert item.value == current[0].payload
