"""SqliteMemoryStore passes the shared conformance kit, on a real database file."""

from collections.abc import Callable
from pathlib import Path

import pytest

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.driver import choose_sqlite
from recallstore.store import MemoryStore
from recallstore.testing import ClockedStoreFactory, MemoryStoreConformance


class TestSqliteConformance(MemoryStoreConformance):
    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> Callable[[], MemoryStore]:
        return lambda: SqliteMemoryStore(tmp_path / "memory.db")

    @pytest.fixture
    def clocked_store_factory(self, tmp_path: Path) -> ClockedStoreFactory:
        return lambda clock: SqliteMemoryStore(tmp_path / "clocked.db", clock=clock)


@pytest.mark.skipif(
    choose_sqlite("auto").name == "stdlib", reason="no SQLite 3.42+ driver (the 'sqlite' extra)"
)
class TestSqliteSecureDeleteConformance(MemoryStoreConformance):
    """The whole kit again on the 'sqlite' extra's SQLite (FTS5 secure-delete); the rest
    of the suite runs on the standard library's."""

    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> Callable[[], MemoryStore]:
        return lambda: SqliteMemoryStore(tmp_path / "memory.db", sqlite_driver="auto")

    @pytest.fixture
    def clocked_store_factory(self, tmp_path: Path) -> ClockedStoreFactory:
        return lambda clock: SqliteMemoryStore(
            tmp_path / "clocked.db", clock=clock, sqlite_driver="auto"
        )
