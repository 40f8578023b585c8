"""Consolidation runs on every bundled backend: memory, a SQLite file, real PostgreSQL.

``opener`` builds a new, unopened store over the test's location; each call of a
hypothesis example opens its own (a fresh SQLite file; the test's Postgres schema, with
a scope of its own per example), so examples never see each other's records.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.store import MemoryStore

Opener = Callable[[], MemoryStore]

try:
    from tests.postgres_server import postgres_schema, postgres_url
except pytest.skip.Exception:  # no psycopg: the postgres cases skip below
    postgres_schema = postgres_url = None  # type: ignore[assignment]

__all__ = ["Opener", "postgres_schema", "postgres_url"]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """A factory of unopened stores of one backend kind."""
    if request.param == "memory":
        yield InMemoryMemoryStore
    elif request.param == "sqlite":
        yield lambda: SqliteMemoryStore(tmp_path / f"{uuid.uuid4().hex}.db")
    else:
        if postgres_url is None:
            pytest.skip("needs the 'postgres' extra")
        from recallstore.backends.postgres import PostgresMemoryStore

        url = request.getfixturevalue("postgres_url")
        schema = request.getfixturevalue("postgres_schema")
        yield lambda: PostgresMemoryStore(url, schema=schema)
