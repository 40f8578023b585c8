"""Differential: random op sequences on LangGraph's own InMemoryStore and on the adapter
(over memory: and a SQLite file) agree wherever the two define the same result — every
get, every unranked search (as a set), every namespace listing, every delete (of a
missing key too: both succeed and change nothing); a namespace emptied by deletes is
not listed (as in PostgresStore; InMemoryStore keeps it)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from recallstore.adapters.langgraph import LangGraphStore
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.store import MemoryStore
from recallstore.sync import SyncMemoryStore

NAMESPACES = [("a",), ("a", "b"), ("a", "c"), ("b",), ("a", "b", "c")]
KEYS = ["k1", "k2", "k3"]
PREFIXES = [(), ("a",), ("a", "b"), ("b",), ("c",)]

puts = st.tuples(
    st.just("put"),
    st.sampled_from(NAMESPACES),
    st.sampled_from(KEYS),
    st.fixed_dictionaries(
        {"content": st.sampled_from(["tea", "coffee", "water"]), "n": st.integers(0, 3)}
    ),
)
deletes = st.tuples(st.just("delete"), st.sampled_from(NAMESPACES), st.sampled_from(KEYS))
gets = st.tuples(st.just("get"), st.sampled_from(NAMESPACES), st.sampled_from(KEYS))
searches = st.tuples(
    st.just("search"),
    st.sampled_from(PREFIXES),
    st.one_of(st.none(), st.fixed_dictionaries({"n": st.integers(0, 3)})),
)
listings = st.tuples(st.just("list"), st.sampled_from(PREFIXES), st.sampled_from([None, 1, 2]))
programs = st.lists(st.one_of(puts, deletes, gets, searches, listings), max_size=25)


def _found(items: list[Any]) -> set[tuple[Any, ...]]:
    return {(item.namespace, item.key, tuple(sorted(item.value.items()))) for item in items}


def _play(program: list[tuple[Any, ...]], ours: LangGraphStore) -> None:
    reference = InMemoryStore()
    for op in program:
        if op[0] == "put":
            reference.put(op[1], op[2], op[3])
            ours.put(op[1], op[2], op[3])
        elif op[0] == "delete":  # a missing key's delete succeeds on both
            reference.delete(op[1], op[2])
            ours.delete(op[1], op[2])
        elif op[0] == "get":
            want, got = reference.get(op[1], op[2]), ours.get(op[1], op[2])
            assert (want is None) == (got is None), op
            if want is not None and got is not None:
                assert (got.namespace, got.key, got.value) == (want.namespace, want.key, want.value)
        elif op[0] == "search":
            want_items = reference.search(op[1], filter=op[2], limit=100)
            assert _found(ours.search(op[1], filter=op[2], limit=100)) == _found(want_items), op
        elif op[2] is None or op[2] >= len(op[1]):  # a depth above the prefix: quirky there
            kwargs: dict[str, Any] = {"prefix": op[1] or None, "max_depth": op[2], "limit": 100}
            listed = [
                ns for ns in reference.list_namespaces(**kwargs) if _live(reference, ns, op[2])
            ]
            assert ours.list_namespaces(**kwargs) == sorted(listed), op


def _live(reference: InMemoryStore, namespace: tuple[str, ...], depth: int | None) -> bool:
    """Whether ``namespace`` still holds an item (or, cut at ``depth``, one lies under it).
    InMemoryStore keeps listing a namespace whose items were all deleted; PostgresStore and
    the adapter do not."""
    under = reference.search(namespace, limit=1000)
    cut = depth is not None and len(namespace) == depth
    return any(cut or item.namespace == namespace for item in under)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(program=programs)
def test_the_adapter_agrees_with_inmemorystore(
    backend: str, tmp_path: Path, program: list[tuple[Any, ...]]
) -> None:
    store: MemoryStore = (
        InMemoryMemoryStore()
        if backend == "memory"
        else SqliteMemoryStore(tmp_path / f"{uuid.uuid4().hex}.db")  # one file per example
    )
    with SyncMemoryStore(store) as opened:
        _play(program, LangGraphStore(opened, namespace_fields=("x", "y", "z")))
