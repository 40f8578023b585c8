"""Hybrid stores (given the kit's ToyEmbedder) pass the hybrid sub-suite and keep the
scope, filter, invalidation, ordering and lifecycle rules, on the in-memory and SQLite
backends (Postgres: tests/backends/postgres)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.hybrid.test_in_process_embedder import InProcessToy

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.testing import (
    CapabilitiesConformance,
    DeleteGetConformance,
    DurabilityConformance,
    FilterConformance,
    HybridSearchConformance,
    InvalidateConformance,
    OrderingConformance,
    ScopeConformance,
    StoreFactory,
    SupersedeConformance,
    ToyEmbedder,
    WriteConformance,
)


class HybridKit(
    HybridSearchConformance,
    WriteConformance,
    SupersedeConformance,
    InvalidateConformance,
    DeleteGetConformance,
    ScopeConformance,
    FilterConformance,
    OrderingConformance,
    CapabilitiesConformance,
    DurabilityConformance,
):
    """The rules a hybrid store keeps, as the conformance kit states them."""


class TestInMemoryHybrid(HybridKit):
    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        return lambda: InMemoryMemoryStore(embedder=ToyEmbedder())


class TestSqliteHybrid(HybridKit):
    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> StoreFactory:
        return lambda: SqliteMemoryStore(tmp_path / "memory.db", embedder=ToyEmbedder())


class TestSqliteHybridInProcess(HybridKit):
    """The same rules when the embedder embeds in process (queries in the store's
    query threads, as with the default embedder)."""

    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> StoreFactory:
        return lambda: SqliteMemoryStore(tmp_path / "memory.db", embedder=InProcessToy())
