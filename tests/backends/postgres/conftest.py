"""A real PostgreSQL for the Postgres backend's tests: one throw-away schema per test
(the fixtures live in tests/postgres_server.py, shared with the adapters' tests)."""

from __future__ import annotations

from tests.postgres_server import (
    POSTGRES_URL,
    pgbouncer_url,
    pgvector_pgbouncer_url,
    pgvector_schema,
    pgvector_url,
    postgres_schema,
    postgres_url,
)

__all__ = [
    "POSTGRES_URL",
    "pgbouncer_url",
    "pgvector_pgbouncer_url",
    "pgvector_schema",
    "pgvector_url",
    "postgres_schema",
    "postgres_url",
]
