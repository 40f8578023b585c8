"""The journal sub-suite of the conformance kit, on the bundled journaling backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.testing._harness import StoreFactory
from recallstore.testing.journal import JournalConformance


class TestSqliteJournal(JournalConformance):
    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> StoreFactory:
        return lambda: SqliteMemoryStore(tmp_path / "memory.db")


class TestUnjournaledSqliteSkips(JournalConformance):
    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> StoreFactory:
        return lambda: SqliteMemoryStore(tmp_path / "memory.db", journal=None)


class TestInMemorySkips(JournalConformance):
    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        store = InMemoryMemoryStore()
        return lambda: store
