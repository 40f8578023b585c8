"""A store of each bundled backend for the capture tests: memory, SQLite, PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.postgres_server import postgres_schema, postgres_url

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.store import MemoryStore

__all__ = ["any_store", "postgres_schema", "postgres_url"]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    """An open store of each backend (Postgres in a throw-away schema)."""
    store: MemoryStore
    if request.param == "memory":
        store = InMemoryMemoryStore()
    elif request.param == "sqlite":
        store = SqliteMemoryStore(tmp_path / "memory.db")
    else:
        from recallstore.backends.postgres import PostgresMemoryStore

        url = request.getfixturevalue("postgres_url")
        store = PostgresMemoryStore(url, schema=request.getfixturevalue("postgres_schema"))
    async with store:
        yield store
