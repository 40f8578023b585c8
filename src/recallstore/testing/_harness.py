"""The fixtures every conformance class shares, and small helpers the tests use."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio

from recallstore.records import (
    MAX_LIMIT,
    MemoryHit,
    MemoryKind,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
)
from recallstore.store import MemoryStore

StoreFactory = Callable[[], MemoryStore]
"""Returns a new, unopened store over the test's location; the kit opens it itself."""

FILLER_WORDS = (
    "harbor", "meadow", "lantern", "pebble", "thunder", "orchard", "saddle", "glacier",
    "marble", "quiver", "tundra", "walnut", "falcon", "prairie", "nectar", "summit",
    "canyon", "ember", "fjord", "goblet", "hammock", "igloo", "jasmine", "kayak",
)  # fmt: skip
"""Words no conformance test queries for; filler records are built from them."""


class StoreHarness:
    """Base of every conformance class: the ``store_factory`` and ``store`` fixtures.

    Subclasses override ``store_factory`` to return a callable that builds a new,
    unopened store over a fresh location for the current test.
    """

    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        """Override me: return ``lambda: YourStore(...)`` over a fresh per-test location."""
        pytest.fail(
            f"{type(self).__name__} must override the store_factory fixture: "
            "return a callable that builds a new, unopened store for this test"
        )

    @pytest_asyncio.fixture
    async def store(self, store_factory: StoreFactory) -> AsyncIterator[MemoryStore]:
        """An opened store from ``store_factory``; it must start empty."""
        async with store_factory() as store:
            if await every_record(store):
                pytest.fail("store_factory must give every test a fresh, empty store")
            yield store

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


async def every_record(store: MemoryStore) -> list[MemoryRecord]:
    """Every stored record (invalidated and expired too), newest first, up to MAX_LIMIT."""
    hits = await search(
        store, None, limit=MAX_LIMIT, include_invalidated=True, include_expired=True
    )
    return [hit.record for hit in hits]


def ids(records: Iterable[MemoryRecord]) -> list[str]:
    """The ids of ``records``, in order."""
    return [record.id for record in records]


def hours_from_now(hours: float) -> datetime:
    """A UTC moment relative to the wall clock (for ``expires_at``)."""
    return datetime.now(UTC) + timedelta(hours=hours)
