"""SqliteMemoryStore passes the shared conformance kit, on a real database file."""

from collections.abc import Callable
from pathlib import Path

import pytest

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.store import MemoryStore
from recallstore.testing import ClockedStoreFactory, MemoryStoreConformance


class TestSqliteConformance(MemoryStoreConformance):
    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> Callable[[], MemoryStore]:
        return lambda: SqliteMemoryStore(tmp_path / "memory.db")

    @pytest.fixture
    def clocked_store_factory(self, tmp_path: Path) -> ClockedStoreFactory:
        return lambda clock: SqliteMemoryStore(tmp_path / "clocked.db", clock=clock)
