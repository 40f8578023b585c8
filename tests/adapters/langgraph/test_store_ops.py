"""LangGraph's own store tests (InMemoryStore's and PostgresStore's), ported to the adapter
and run over memory:, a SQLite file and PostgreSQL; where recallstore keeps a stronger
rule (a put supersedes, a search is ranked) the
test pins recallstore's rule and says so."""

from __future__ import annotations

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from recallstore.adapters.langgraph import DELETE_REASON, ItemNotFoundError, LangGraphStore
from recallstore.errors import ConfigurationError, MemoryValidationError
from recallstore.sync import SyncMemoryStore


def items(result: object) -> list[Item]:
    """A search result of a batch, checked to be a list of items."""
    assert isinstance(result, list)
    assert all(isinstance(item, Item) for item in result)
    return result


def test_batch_results_follow_the_order_of_the_ops(lg_store: LangGraphStore) -> None:
    lg_store.put(("test", "foo"), "key1", {"data": "value1"})
    lg_store.put(("test", "bar"), "key2", {"data": "value2"})
    results = lg_store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), filter={"data": "value1"}),
            ListNamespacesOp(limit=10),
            GetOp(("test",), "key3"),
        ]
    )
    assert isinstance(results[0], Item)
    assert (results[0].key, results[0].value) == ("key1", {"data": "value1"})
    assert results[1] is None
    assert [item.key for item in items(results[2])] == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None

    reordered = lg_store.batch(
        [
            SearchOp(("test",), limit=5),
            GetOp(("test", "bar"), "key2"),
            PutOp(("test",), "key3", {"data": "value3"}),
            GetOp(("test",), "key3"),
        ]
    )
    assert {item.key for item in items(reordered[0])} == {"key1", "key2"}
    assert isinstance(reordered[1], Item)
    assert reordered[1].value == {"data": "value2"}
    assert reordered[2] is None
    assert isinstance(reordered[3], Item)  # a put is visible to the ops after it
    assert reordered[3].value == {"data": "value3"}


def test_batch_puts_and_deletes(lg_store: LangGraphStore) -> None:
    results = lg_store.batch(
        [
            PutOp(("test",), "key1", {"data": "value1"}),
            PutOp(("test",), "key2", {"data": "value2"}),
            PutOp(("test",), "key2", None),
        ]
    )
    assert results == [None, None, None]
    first = lg_store.get(("test",), "key1")
    assert first is not None
    assert first.value == {"data": "value1"}
    assert lg_store.get(("test",), "key2") is None


def test_deleting_a_missing_key_succeeds_and_changes_nothing(lg_store: LangGraphStore) -> None:
    # LangGraph's contract (InMemoryStore, PostgresStore): a model's made-up id in
    # langmem's delete must not end the run (tests/adapters/langgraph/test_langmem_agent.py).
    lg_store.put(("test",), "k", {"data": 1})
    lg_store.delete(("test",), "never-put")
    lg_store.delete(("test", "deeper"), "k")
    assert lg_store.batch([PutOp(("test",), "never-put", None)]) == [None]
    (kept,) = lg_store.history(("test",), "k")
    assert kept.invalid_at is None
    lg_store.delete(("test",), "k")
    lg_store.delete(("test",), "k")  # deleted once: the second changes nothing
    (gone,) = lg_store.history(("test",), "k")
    assert gone.invalid_reason == DELETE_REASON


def test_a_strict_adapter_refuses_a_delete_of_a_missing_key(
    backend_store: SyncMemoryStore,
) -> None:
    strict = LangGraphStore(backend_store, namespace_fields=("ns0",), strict_delete=True)
    with pytest.raises(ItemNotFoundError) as raised:
        strict.delete(("test",), "never-put")
    assert (raised.value.namespace, raised.value.key) == (("test",), "never-put")
    assert isinstance(raised.value, LookupError)
    strict.put(("test",), "k", {"data": 1})
    strict.delete(("test",), "k")
    with pytest.raises(ItemNotFoundError):
        strict.delete(("test",), "k")  # deleted once: nothing current left to delete
    with pytest.raises(ConfigurationError, match="strict_delete"):
        LangGraphStore(backend_store, namespace_fields=("ns0",), strict_delete="yes")  # type: ignore[arg-type]


def test_put_update_delete_keep_every_version(lg_store: LangGraphStore) -> None:
    namespace = ("test", "documents")
    lg_store.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = lg_store.get(namespace, "doc1")
    assert item is not None
    assert (item.namespace, item.key) == (namespace, "doc1")
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}

    lg_store.put(namespace, "doc1", {"title": "Updated", "content": "Hello, Updated!"})
    updated = lg_store.get(namespace, "doc1")
    assert updated is not None
    assert updated.value == {"title": "Updated", "content": "Hello, Updated!"}
    assert updated.updated_at > item.updated_at
    assert lg_store.get(("test", "other_documents"), "doc1") is None

    lg_store.delete(namespace, "doc1")
    assert lg_store.get(namespace, "doc1") is None
    assert lg_store.search(namespace) == []

    first, second = lg_store.history(namespace, "doc1")
    assert first.content == "Hello, World!"
    assert first.superseded_by == second.id
    assert second.content == "Hello, Updated!"
    assert second.invalid_reason == DELETE_REASON
    assert second.superseded_by is None


def test_putting_the_same_value_again_writes_no_new_version(lg_store: LangGraphStore) -> None:
    lg_store.put(("test",), "k", {"content": "same"})
    lg_store.put(("test",), "k", {"content": "same"})
    assert len(lg_store.history(("test",), "k")) == 1


def test_batch_search_ops(lg_store: LangGraphStore) -> None:
    for namespace, key, value in [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        lg_store.put(namespace, key, value)
    tagged, two, foo = lg_store.batch(
        [
            SearchOp(("test",), filter={"tag": "a"}),
            SearchOp(("test",), limit=2),
            SearchOp(("test", "foo")),
        ]
    )
    assert sorted(item.key for item in items(tagged)) == ["key1", "key2"]
    assert len(items(two)) == 2
    assert [(item.namespace, item.key) for item in items(foo)] == [(("test", "foo"), "key1")]


def test_search_filters_paginates_and_ranks(lg_store: LangGraphStore) -> None:
    lg_store.put(("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "n": 1})
    lg_store.put(("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "n": 2})
    lg_store.put(("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "n": 3})

    assert len(lg_store.search(("test",))) == 3
    docs = lg_store.search(("test", "docs"))
    assert {item.namespace for item in docs} == {("test", "docs")}
    alice = lg_store.search(("test",), filter={"author": "Alice"})
    assert sorted(item.key for item in alice) == ["doc1", "img1"]
    assert [i.key for i in lg_store.search(("test",), filter={"n": {"$gte": 2, "$lt": 3}})] == [
        "doc2"
    ]
    assert len(lg_store.search(("test",), filter={"author": {"$ne": "Alice"}})) == 1
    assert len(lg_store.search(("test",), limit=2)) == 2
    assert len(lg_store.search(("test",), offset=2)) == 1
    # Newest first without a query; ranked with one, and only what matches.
    assert [item.key for item in lg_store.search(("test",))] == ["img1", "doc2", "doc1"]
    ranked = lg_store.search(("test",), query="second doc")
    assert [item.key for item in ranked][:2] == ["doc2", "doc1"]
    assert "img1" not in {item.key for item in ranked}
    assert all(item.score is not None for item in ranked)
    with pytest.raises(MemoryValidationError, match=r"\$regex"):
        lg_store.search(("test",), filter={"author": {"$regex": "A.*"}})


def test_list_namespaces_with_prefix_suffix_depth_and_pages(lg_store: LangGraphStore) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, namespace in enumerate(namespaces):
        lg_store.put(namespace, f"id_{i}", {"data": f"value_{i:02d}"})

    assert sorted(lg_store.list_namespaces()) == sorted(namespaces)
    under_ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert lg_store.list_namespaces(prefix=("a", "b")) == under_ab
    assert lg_store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert lg_store.list_namespaces(prefix=("a",), suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert lg_store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert lg_store.list_namespaces(prefix=("a", "b"), limit=2) == under_ab[:2]
    assert lg_store.list_namespaces(prefix=("a", "b"), offset=2) == under_ab[2:]
    assert lg_store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg_store.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert lg_store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert lg_store.list_namespaces(prefix=("nonexistent",)) == []
    assert lg_store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert lg_store.list_namespaces(max_depth=2) == [
        ("a", "b"),
        ("a", "c"),
        ("admin", "users"),
        ("b", "a"),
        ("users", "123"),
        ("users", "456"),
    ]
    results = lg_store.batch(
        [ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("settings",)),))]
    )
    assert results == [[("users", "456", "settings")]]


def test_list_namespaces_pages_in_order_and_drops_deleted(lg_store: LangGraphStore) -> None:
    assert lg_store.list_namespaces() == []
    for i in range(20):
        lg_store.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    pages = [lg_store.list_namespaces(prefix=("namespace",), limit=5, offset=o) for o in (0, 15)]
    assert pages == [
        [("namespace", f"sub_{i:02d}") for i in range(5)],
        [("namespace", f"sub_{i:02d}") for i in range(15, 20)],
    ]
    lg_store.delete(("namespace", "sub_00"), "id_00")
    assert ("namespace", "sub_00") not in lg_store.list_namespaces(limit=100)


def test_prefixes_stop_at_label_boundaries(lg_store: LangGraphStore) -> None:
    for namespace in [
        ("foo",),
        ("foo", "child"),
        ("foo", "child", "deep"),
        ("foobar",),
        ("foobar", "baz"),
        ("foo2",),
        ("user_1",),
        ("a%b",),
        ("axxb",),
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
        ("users", "alice"),
        ("users", "alice\n"),
    ]:
        lg_store.put(namespace, "k", {"v": 1})

    def found(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {item.namespace for item in lg_store.search(prefix, limit=100)}

    assert found(("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert found(("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert found(("foo2",)) == {("foo2",)}
    assert found(("fo",)) == set()
    assert found(("user_1",)) == {("user_1",)}
    assert found(("a%b",)) == {("a%b",)}
    assert len(found(())) == 14
    assert set(lg_store.list_namespaces(suffix=("alice",), limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "a", "b", "alice"),
        ("users", "alice"),
    }
    assert lg_store.list_namespaces(prefix=("uid", "*", "alice")) == [("uid", "users", "alice")]
    assert lg_store.list_namespaces(prefix=("users", "alice")) == [("users", "alice")]


def test_bad_namespaces_keys_and_values_are_refused_before_anything_runs(
    lg_store: LangGraphStore,
) -> None:
    for namespace in [(), ("the", "thing.about"), ("langgraph", "x"), ("a", "")]:
        with pytest.raises(InvalidNamespaceError):
            lg_store.put(namespace, "foo", {"foo": "bar"})
    with pytest.raises(InvalidNamespaceError, match="at most 4"):
        lg_store.put(("a", "b", "c", "d", "e"), "foo", {"foo": "bar"})
    with pytest.raises(MemoryValidationError, match="key"):
        lg_store.put(("a",), "", {"foo": "bar"})
    with pytest.raises(MemoryValidationError, match="value"):
        lg_store.put(("a",), "k", {"when": object()})
    with pytest.raises(MemoryValidationError, match="ttl"):
        lg_store.put(("a",), "k", {"foo": "bar"}, ttl=-1)
    for ttl in [1e18, 10**400, 6e9, True]:  # past the calendar's end; a bool is not minutes
        with pytest.raises(MemoryValidationError, match="ttl") as raised:
            lg_store.put(("a",), "k", {"foo": "bar"}, ttl=ttl)
        assert raised.value.value == ttl
    # One bad op in a batch: the good op before it is not applied either.
    with pytest.raises(InvalidNamespaceError):
        lg_store.batch([PutOp(("a",), "k", {"v": 1}), PutOp(("a.b",), "k", {"v": 2})])
    assert lg_store.get(("a",), "k") is None
    assert lg_store.list_namespaces() == []


def test_a_ttl_sets_the_expiry_and_expired_items_are_gone(lg_store: LangGraphStore) -> None:
    lg_store.put(("foo",), "long", {"foo": "bar"}, ttl=60)
    lg_store.put(("foo",), "short", {"foo": "bar"}, ttl=0.001)  # 60 ms
    (record,) = lg_store.history(("foo",), "long")
    assert record.expires_at is not None
    assert 3590 < (record.expires_at - record.created_at).total_seconds() <= 3600
    import time

    time.sleep(0.2)
    assert lg_store.get(("foo",), "short") is None
    assert [item.key for item in lg_store.search(("foo",), query="bar")] == ["long"]
    assert lg_store.get(("foo",), "long") is not None


def test_index_chooses_the_searchable_text(lg_store: LangGraphStore) -> None:
    lg_store.put(("docs",), "a", {"title": "zebra", "body": "giraffe"}, index=["title"])
    lg_store.put(("docs",), "b", {"content": "giraffe habitat"})
    lg_store.put(("docs",), "c", {"content": "giraffe again"}, index=False)
    assert [item.key for item in lg_store.search(("docs",), query="zebra")] == ["a"]
    assert [item.key for item in lg_store.search(("docs",), query="giraffe")] == ["b"]
    assert {item.key for item in lg_store.search(("docs",))} == {"a", "b", "c"}


def test_non_ascii_text_is_found(lg_store: LangGraphStore) -> None:
    texts = ["Это русский текст", "Ceci est un café", "Größere Übungen"]
    for i, text in enumerate(texts):
        lg_store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts):
        assert lg_store.search(("user_123", "memories"), query=text)[0].key == str(i)
