"""Fixtures for the agent-surface tests: real stores (in-memory and a SQLite file)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from recallstore import InMemoryMemoryStore, MemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    """An open store of each bundled kind; SQLite on a real file."""
    backend: MemoryStore = (
        InMemoryMemoryStore()
        if request.param == "memory"
        else SqliteMemoryStore(tmp_path / "memory.db")
    )
    async with backend:
        yield backend
