"""Differential test: random operation sequences against the backend and the reference.

Hypothesis generates sequences of writes (with and without ``supersedes``),
invalidations, deletions, gets and searches over a small vocabulary, and runs each
sequence against the backend under test and a fresh ``InMemoryMemoryStore``. Ids
differ between the two stores, so records are compared through "handles" (the order
in which they were created). Listings must match exactly, order included; keyword
queries must match the same set of records (ranking may legitimately differ; for
backends whose search is not "keyword" only the result count is bounded); error
outcomes must match too.

Every example starts from an empty backend: the kit deletes whatever an earlier
example left at the factory's location, using only the protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.errors import MemoryConflictError, MemoryNotFoundError
from recallstore.records import (
    MAX_LIMIT,
    MEMORY_KINDS,
    MemoryKind,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
)
from recallstore.store import MemoryStore, utc_now
from recallstore.testing._harness import StoreFactory, StoreHarness, every_record

__all__ = ["DifferentialConformance"]

# Distinct under Porter stemming, so stemming and non-stemming backends agree.
_VOCABULARY = ("apple", "river", "violin", "copper", "garden", "tiger", "lemon", "cobalt")
_SCOPES: tuple[dict[str, str], ...] = (
    {},
    {"tenant": "acme"},
    {"tenant": "acme", "user": "u1"},
    {"tenant": "acme", "user": "u2"},
    {"tenant": "globex", "user": "u1"},
)
_SCOPE_FILTERS = (*_SCOPES, {"user": "u1"})
_TAGS = ("red", "blue", "green")
_MISSING_ID = "no-such-record"
_Expiry = Literal["past", "future"] | None


@dataclass(frozen=True)
class _Item:
    words: tuple[str, ...]
    kind: MemoryKind
    tags: tuple[str, ...]
    scope: int
    expiry: _Expiry
    supersedes: int | None


@dataclass(frozen=True)
class _Write:
    items: tuple[_Item, ...]


@dataclass(frozen=True)
class _Invalidate:
    handle: int
    reason: str | None


@dataclass(frozen=True)
class _Delete:
    handle: int


@dataclass(frozen=True)
class _Get:
    handle: int


@dataclass(frozen=True)
class _Search:
    words: tuple[str, ...] | None
    separator: str
    scope: int
    kinds: tuple[MemoryKind, ...] | None
    tags: tuple[str, ...] | None
    limit: int
    include_invalidated: bool
    include_expired: bool


_Operation = _Write | _Invalidate | _Delete | _Get | _Search

_handles = st.integers(min_value=0, max_value=30)
_words = st.lists(st.sampled_from(_VOCABULARY), min_size=1, max_size=4).map(tuple)
_items = st.builds(
    _Item,
    words=_words,
    kind=st.sampled_from(MEMORY_KINDS),
    tags=st.lists(st.sampled_from(_TAGS), max_size=2, unique=True).map(tuple),
    scope=st.integers(min_value=0, max_value=len(_SCOPES) - 1),
    expiry=st.sampled_from([None, None, "past", "future"]),
    # Mostly plain writes: one failing supersede fails its whole batch (S1).
    supersedes=st.sampled_from((None,) * 24 + tuple(range(8))),
)
_writes = st.builds(_Write, items=st.lists(_items, min_size=1, max_size=4).map(tuple))
_searches = st.builds(
    _Search,
    words=st.none() | st.lists(st.sampled_from(_VOCABULARY), min_size=1, max_size=3).map(tuple),
    separator=st.sampled_from([" ", ", ", " -", " OR ", "! ("]),
    scope=st.integers(min_value=0, max_value=len(_SCOPE_FILTERS) - 1),
    kinds=st.sampled_from([None, ()])
    | st.lists(st.sampled_from(MEMORY_KINDS), min_size=1, max_size=2).map(tuple),
    tags=st.sampled_from([None, ()])
    | st.lists(st.sampled_from(_TAGS), min_size=1, max_size=2).map(tuple),
    limit=st.sampled_from([0, 1, 3, 10, MAX_LIMIT]),
    include_invalidated=st.booleans(),
    include_expired=st.booleans(),
)
_step = st.tuples(
    st.one_of(
        _writes,
        st.builds(_Invalidate, handle=_handles, reason=st.sampled_from([None, "wrong"])),
        st.builds(_Delete, handle=_handles),
        st.builds(_Get, handle=_handles),
    ),
    _searches,
)
# Every sequence starts with some records, and every later change is followed by a search.
_OPERATIONS = st.tuples(
    st.lists(_writes, min_size=2, max_size=4), st.lists(_step, min_size=3, max_size=12)
).map(lambda parts: [*parts[0], *(operation for step in parts[1] for operation in step)])


class DifferentialConformance(StoreHarness):
    """Random operation sequences give the same results as the in-memory reference."""

    @pytest.mark.asyncio
    @settings(
        max_examples=40,
        deadline=None,
        # Each example resets the store itself, and every backend subclass runs this same
        # method: examples saved for one backend are valid inputs for any other.
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.differing_executors,
        ],
    )
    @given(operations=_OPERATIONS)
    async def test_s1_to_s12_differential_random_operations_match_the_reference(
        self, store_factory: StoreFactory, operations: list[_Operation]
    ) -> None:
        await _run_against_reference(store_factory, operations)


async def _run_against_reference(factory: StoreFactory, operations: Sequence[_Operation]) -> None:
    """Apply ``operations`` to a store from ``factory`` and to the reference; assert they agree."""
    async with factory() as backend, InMemoryMemoryStore() as reference:
        await _empty(backend)
        pair = _Pair(backend, reference)
        for step, operation in enumerate(operations):
            await pair.apply(operation, step)


async def _empty(store: MemoryStore) -> None:
    """Delete every record a previous example left behind."""
    while records := await every_record(store):
        for record in records:
            await store.delete(record.id)


class _Side:
    """One store plus the mapping between its ids and the shared handles."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.ids: list[str] = []
        self.handle_of: dict[str, int] = {}

    def resolve(self, handle: int) -> str:
        return self.ids[handle % len(self.ids)] if self.ids else _MISSING_ID

    def register(self, records: Sequence[MemoryRecord]) -> None:
        for record in records:
            self.handle_of[record.id] = len(self.ids)
            self.ids.append(record.id)

    def normalise(self, record: MemoryRecord) -> dict[str, Any]:
        """The record with ids replaced by handles and timestamps by the facts that matter."""
        return {
            "handle": self.handle_of[record.id],
            "content": record.content,
            "scope": record.scope,
            "kind": record.kind,
            "tags": record.tags,
            "expires_at": record.expires_at,
            "invalid": record.invalid_at is not None,
            "invalid_reason": record.invalid_reason,
            "superseded_by": (
                None if record.superseded_by is None else self.handle_of[record.superseded_by]
            ),
            "fresh": record.created_at == record.updated_at,
        }


class _Pair:
    def __init__(self, backend: MemoryStore, reference: MemoryStore) -> None:
        self.backend = _Side(backend)
        self.reference = _Side(reference)
        self.keyword_backend = backend.capabilities().search == "keyword"
        now = utc_now()
        self.expiry: dict[str | None, datetime | None] = {
            None: None,
            "past": now - timedelta(hours=1),
            "future": now + timedelta(hours=1),
        }

    async def apply(self, operation: _Operation, step: int) -> None:
        where = f"step {step}: {operation}"
        if isinstance(operation, _Search):
            await self._search(operation, where)
            return
        expected = await self._outcome(self.reference, operation)
        actual = await self._outcome(self.backend, operation)
        assert actual == expected, where

    async def _outcome(self, side: _Side, operation: _Operation) -> object:
        try:
            if isinstance(operation, _Write):
                records = await side.store.write([self._input(side, i) for i in operation.items])
                side.register(records)
                return [side.normalise(record) for record in records]
            if isinstance(operation, _Invalidate):
                await side.store.invalidate(side.resolve(operation.handle), operation.reason)
                return await self._state(side, operation.handle)
            if isinstance(operation, _Delete):
                await side.store.delete(side.resolve(operation.handle))
                return await self._state(side, operation.handle)
            if isinstance(operation, _Get):
                return await self._state(side, operation.handle)
        except (MemoryNotFoundError, MemoryConflictError) as exc:
            return type(exc).__name__
        raise AssertionError(f"unknown operation {operation!r}")

    async def _state(self, side: _Side, handle: int) -> object:
        record = await side.store.get(side.resolve(handle))
        return None if record is None else side.normalise(record)

    def _input(self, side: _Side, item: _Item) -> MemoryWriteInput:
        return MemoryWriteInput(
            scope=_SCOPES[item.scope],
            kind=item.kind,
            content=" ".join(item.words),
            tags=item.tags,
            expires_at=self.expiry[item.expiry],
            supersedes=None if item.supersedes is None else side.resolve(item.supersedes),
        )

    async def _search(self, operation: _Search, where: str) -> None:
        text = None if operation.words is None else operation.separator.join(operation.words)
        query = MemorySearchQuery(
            query=text,
            scope=_SCOPE_FILTERS[operation.scope],
            kinds=operation.kinds,
            tags=operation.tags,
            limit=operation.limit,
            include_invalidated=operation.include_invalidated,
            include_expired=operation.include_expired,
        )
        actual = [self.backend.normalise(h.record) for h in await self.backend.store.search(query)]
        if query.is_listing:
            expected = [
                self.reference.normalise(h.record) for h in await self.reference.store.search(query)
            ]
            assert actual == expected, where
            return
        if not self.keyword_backend:
            # Semantic and hybrid backends may return other records; only bound the count.
            assert len(actual) <= operation.limit, where
            return
        # Ranking may differ between backends: compare the full match set instead.
        every_match = query.model_copy(update={"limit": MAX_LIMIT})
        matches = {
            record["handle"]: record
            for record in (
                self.reference.normalise(h.record)
                for h in await self.reference.store.search(every_match)
            )
        }
        assert len(actual) == min(operation.limit, len(matches)), where
        assert [matches.get(record["handle"]) for record in actual] == actual, where
        if len(matches) <= operation.limit:
            assert {record["handle"] for record in actual} == set(matches), where
