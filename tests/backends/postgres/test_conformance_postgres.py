"""The Postgres backend runs the same conformance kit as every other backend."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.store import MemoryStore
from recallstore.testing import ClockedStoreFactory, MemoryStoreConformance


class TestPostgresConformance(MemoryStoreConformance):
    @pytest.fixture
    def store_factory(self, postgres_url: str, postgres_schema: str) -> Callable[[], MemoryStore]:
        return lambda: PostgresMemoryStore(postgres_url, schema=postgres_schema)

    @pytest.fixture
    def clocked_store_factory(self, postgres_url: str, postgres_schema: str) -> ClockedStoreFactory:
        return lambda clock: PostgresMemoryStore(postgres_url, schema=postgres_schema, clock=clock)
