"""A real PostgreSQL for the tests that need one: the server URL and a throw-away schema.

The server comes from RECALLSTORE_TEST_POSTGRES_URL (default: the local trust-auth
server's ``test`` database). Without a reachable server the tests skip, unless
RECALLSTORE_REQUIRE_POSTGRES=1 (CI), where they fail. A conftest imports the fixtures
(``from tests.postgres_server import postgres_schema, postgres_url``) to offer them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

psycopg = pytest.importorskip("psycopg", reason="needs the 'postgres' extra")

POSTGRES_URL = os.environ.get(
    "RECALLSTORE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def _unreachable_reason() -> str | None:
    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"PostgreSQL at {POSTGRES_URL} is unreachable: {exc}"
    return None


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The URL of a reachable PostgreSQL server."""
    reason = _unreachable_reason()
    if reason is not None:
        if os.environ.get("RECALLSTORE_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return POSTGRES_URL


@pytest.fixture
def postgres_schema(postgres_url: str) -> Iterator[str]:
    """A fresh schema name, dropped with everything in it after the test."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
