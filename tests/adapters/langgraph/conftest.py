"""The LangGraph adapter over each bundled backend: memory:, a SQLite file, PostgreSQL.

``backend_store`` is a :class:`~recallstore.sync.SyncMemoryStore` on one of the three
(a throw-away schema for PostgreSQL); ``lg_store`` the adapter over it, mapping up to four
namespace labels (LangGraph's own tests use that many) inside the scope tenant=acme.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.postgres_server import postgres_schema, postgres_url

from recallstore.adapters.langgraph import LangGraphStore
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.store import MemoryStore
from recallstore.sync import SyncMemoryStore

__all__ = ["postgres_schema", "postgres_url"]

BACKENDS = ("memory", "sqlite", "postgres")
FIELDS = ("ns0", "ns1", "ns2", "ns3")
TENANT = {"tenant": "acme"}


def open_backend(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> MemoryStore:
    """An unopened store of backend ``name``."""
    if name == "memory":
        return InMemoryMemoryStore()
    if name == "sqlite":
        return SqliteMemoryStore(tmp_path / "memory.db")
    from recallstore.backends.postgres import PostgresMemoryStore

    url = request.getfixturevalue("postgres_url")
    return PostgresMemoryStore(url, schema=request.getfixturevalue("postgres_schema"))


@pytest.fixture(params=BACKENDS)
def backend_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SyncMemoryStore]:
    with SyncMemoryStore(open_backend(request.param, tmp_path, request)) as store:
        yield store


@pytest.fixture
def lg_store(backend_store: SyncMemoryStore) -> LangGraphStore:
    return LangGraphStore(backend_store, namespace_fields=FIELDS, scope=TENANT)
