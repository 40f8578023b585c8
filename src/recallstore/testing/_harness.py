"""The fixtures every conformance class shares, and small helpers the tests use."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio

from recallstore.records import (
    MemoryHit,
    MemoryKind,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
)
from recallstore.store import Clock, MemoryStore
from recallstore.testing._checked import CheckedStore, every_record, unwrap
from recallstore.testing._rules import DEFAULT_TIME_LIMIT, time_limit
from recallstore.values import utc_now

__all__ = [
    "ClockedStoreFactory",
    "StoreFactory",
    "StoreHarness",
    "every_record",
    "hours_from_now",
    "ids",
    "memory",
    "search",
    "search_ids",
    "unwrap",
    "write_fillers",
    "write_one",
]

StoreFactory = Callable[[], MemoryStore]
"""Returns a new, unopened store over the test's location; the kit opens it itself."""
ClockedStoreFactory = Callable[[Clock], MemoryStore]
"""Like :data:`StoreFactory`, for a store that reads the current time from ``clock``."""

FILLER_WORDS = (
    "harbor", "meadow", "lantern", "pebble", "thunder", "orchard", "saddle", "glacier",
    "marble", "quiver", "tundra", "walnut", "falcon", "prairie", "nectar", "summit",
    "canyon", "ember", "fjord", "goblet", "hammock", "igloo", "jasmine", "kayak",
)  # fmt: skip
"""Words no conformance test queries for; filler records are built from them."""


class StoreHarness:
    """Base of every conformance class: the ``store_factory`` and ``store`` fixtures.

    Subclasses override ``store_factory`` to return a callable that builds a new,
    unopened store over a fresh location for the current test. Two class attributes
    tune the kit: ``kit_time_limit`` (seconds one test may take) and
    ``differential_examples`` (how many random sequences the differential test runs).
    """

    kit_time_limit: float = DEFAULT_TIME_LIMIT
    differential_examples: int = 40
    differential_shrink_seconds: float = 10.0

    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        """Override me: return ``lambda: YourStore(...)`` over a fresh per-test location."""
        pytest.fail(
            f"{type(self).__name__} must override the store_factory fixture: "
            "return a callable that builds a new, unopened store for this test"
        )

    @pytest.fixture
    def clocked_store_factory(self) -> ClockedStoreFactory | None:
        """Optional: return ``lambda clock: YourStore(..., clock=clock)`` to run the clock suite.

        The clock suite pins the time edges (expiry at exactly ``expires_at``, stamps
        taken from the clock) with a frozen clock; it is skipped while this returns None.
        """
        return None

    @pytest_asyncio.fixture
    async def store(self, store_factory: StoreFactory) -> AsyncIterator[MemoryStore]:
        """An opened store from ``store_factory``, checked by the kit; it must start empty."""
        limit = float(self.kit_time_limit)
        backend = store_factory()
        async with time_limit(limit, "lifecycle", lambda: "while opening the store"):
            await backend.__aenter__()
        checked: CheckedStore | None = None
        try:
            async with time_limit(limit, "S10", lambda: "while listing the new store"):
                leftovers = await every_record(backend)
            if leftovers:
                pytest.fail(
                    "store_factory must give every test a fresh, empty store; this one "
                    f"already holds {len(leftovers)} record(s) (use tmp_path, a fresh schema...)"
                )
            checked = CheckedStore(backend)
            yield checked
        finally:
            if checked is None or not checked.closed:
                async with time_limit(limit, "lifecycle", lambda: "while closing the store"):
                    await backend.__aexit__(None, None, None)

    @pytest.fixture
    def keyword_store(self, store: MemoryStore) -> MemoryStore:
        """The opened store; skips the test unless ``capabilities().search == "keyword"``."""
        if store.capabilities().search != "keyword":
            pytest.skip("keyword-search rule; this store's search is not 'keyword'")
        return store

    @pytest.fixture
    def durable_store(self, store: MemoryStore) -> MemoryStore:
        """The opened store; skips the test unless it declares ``durable=True``."""
        if not store.capabilities().durable:
            pytest.skip("durability rule; this store declares durable=False")
        return store

    @pytest.fixture
    def shared_store(self, durable_store: MemoryStore) -> MemoryStore:
        """The opened durable store; skips it when it declares ``single_opener=True``."""
        if durable_store.capabilities().single_opener:
            pytest.skip("several-openers rule; this store declares single_opener=True")
        return durable_store

    @pytest.fixture
    def single_opener_store(self, durable_store: MemoryStore) -> MemoryStore:
        """The opened durable store; skips it unless it declares ``single_opener=True``."""
        if not durable_store.capabilities().single_opener:
            pytest.skip("single-opener rule; this store declares single_opener=False")
        return durable_store


def memory(
    content: str,
    *,
    scope: Mapping[str, str] | None = None,
    kind: MemoryKind = "fact",
    tags: Iterable[str] = (),
    supersedes: str | None = None,
    expires_at: datetime | None = None,
    **fields: Any,
) -> MemoryWriteInput:
    """A write input with sensible defaults for tests."""
    return MemoryWriteInput(
        scope=dict(scope or {}),
        kind=kind,
        content=content,
        tags=tuple(tags),
        supersedes=supersedes,
        expires_at=expires_at,
        **fields,
    )


async def write_one(store: MemoryStore, content: str, **fields: Any) -> MemoryRecord:
    """Write one record and return it."""
    (record,) = await store.write([memory(content, **fields)])
    return record


async def write_fillers(store: MemoryStore, count: int, **fields: Any) -> list[MemoryRecord]:
    """Write ``count`` records of filler words, so query terms stay rare in the corpus.

    FTS5's bm25 floors the idf of a term found in more than half the documents to
    almost zero; ranking tests add fillers so the terms they compare stay rare.
    """
    inputs = []
    for number in range(count):
        words = [FILLER_WORDS[(number + offset) % len(FILLER_WORDS)] for offset in range(3)]
        inputs.append(memory(" ".join(words), **fields))
    return await store.write(inputs)


async def search(store: MemoryStore, query: str | None = None, **filters: Any) -> list[MemoryHit]:
    """Run a search built from keyword arguments."""
    return await store.search(MemorySearchQuery(query=query, **filters))


async def search_ids(store: MemoryStore, query: str | None = None, **filters: Any) -> list[str]:
    """The ids a search returns, in order."""
    return [hit.record.id for hit in await search(store, query, **filters)]


def ids(records: Iterable[MemoryRecord]) -> list[str]:
    """The ids of ``records``, in order."""
    return [record.id for record in records]


def hours_from_now(hours: float) -> datetime:
    """A UTC moment relative to the wall clock (for ``expires_at``)."""
    return utc_now() + timedelta(hours=hours)
