"""The Postgres backend's schema: the migration ladder and how it is applied.

Applied versions are rows of ``<schema>.schema_migrations``. The ladder is
append-only: a released step is never edited, a change is a new entry. A database
whose version is newer than ``SCHEMA_VERSION`` is refused before anything is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from recallstore.errors import StoreIncompatibleError

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["SCHEMA_VERSION", "installed_version", "migrate", "migrations"]


def migrations(schema: str) -> list[list[str]]:
    """The append-only migration ladder: entry ``n`` upgrades version ``n`` to ``n + 1``."""
    return [
        [
            f"CREATE TEXT SEARCH DICTIONARY {schema}.english_stem_all "
            "(TEMPLATE = snowball, LANGUAGE = english)",
            f"CREATE TEXT SEARCH CONFIGURATION {schema}.memory_text (PARSER = pg_catalog.default)",
            f"ALTER TEXT SEARCH CONFIGURATION {schema}.memory_text ADD MAPPING FOR "
            "asciiword, word, numword, asciihword, hword, numhword, hword_asciipart, "
            f"hword_part, hword_numpart WITH {schema}.english_stem_all",
            f"ALTER TEXT SEARCH CONFIGURATION {schema}.memory_text ADD MAPPING FOR "
            "int, uint, float, sfloat, version WITH simple",
            f"""CREATE TABLE {schema}.memory_records (
                id text PRIMARY KEY,
                scope jsonb NOT NULL,
                kind text NOT NULL,
                content text NOT NULL,
                tags text[] NOT NULL DEFAULT '{{}}',
                provenance jsonb,
                created_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL,
                invalid_at timestamptz,
                invalid_reason text,
                superseded_by text,
                expires_at timestamptz,
                target jsonb,
                payload jsonb,
                supports jsonb NOT NULL DEFAULT '[]',
                search_text tsvector NOT NULL
            )""",
            f"CREATE INDEX memory_records_scope ON {schema}.memory_records "
            "USING gin (scope jsonb_path_ops)",
            f"CREATE INDEX memory_records_text ON {schema}.memory_records USING gin (search_text)",
            f"CREATE INDEX memory_records_tags ON {schema}.memory_records USING gin (tags)",
            f"CREATE INDEX memory_records_recency ON {schema}.memory_records "
            "(created_at DESC, id DESC)",
        ],
        # The event journal (recallstore.backends.journal).
        [
            f"""CREATE TABLE {schema}.memory_journal (
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                at timestamptz NOT NULL,
                type text NOT NULL,
                envelope jsonb NOT NULL
            )""",
            f"CREATE INDEX memory_journal_at ON {schema}.memory_journal (at)",
        ],
    ]


SCHEMA_VERSION: Final = 2
"""The schema version this code writes; a newer database is refused."""


async def installed_version(conn: AsyncConnection[Any], schema: str) -> int:
    """The newest applied migration in ``schema``; 0 when it has none (or does not exist)."""
    cursor = await conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.schema_migrations",)
    )
    row = await cursor.fetchone()
    if row is None or not row[0]:
        return 0
    cursor = await conn.execute(f"SELECT coalesce(max(version), 0) FROM {schema}.schema_migrations")
    row = await cursor.fetchone()
    return int(row[0]) if row is not None else 0


async def migrate(conn: AsyncConnection[Any], schema: str, target: str) -> None:
    """Bring ``schema`` up to SCHEMA_VERSION in one transaction, one migrator at a time.

    ``target`` names the database in errors (a URL without its password).
    """
    # Look before writing anything: a newer database is left exactly as it is.
    found = await installed_version(conn, schema)
    if found > SCHEMA_VERSION:
        raise StoreIncompatibleError(target, found, SCHEMA_VERSION)
    if found == SCHEMA_VERSION:
        return
    async with conn.transaction():
        # One migrator at a time per schema, across processes.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (schema,))
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {schema}.schema_migrations "
            "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        found = await installed_version(conn, schema)
        if found > SCHEMA_VERSION:
            raise StoreIncompatibleError(target, found, SCHEMA_VERSION)
        for version, steps in enumerate(migrations(schema)[found:], start=found + 1):
            for statement in steps:
                await conn.execute(statement)
            await conn.execute(
                f"INSERT INTO {schema}.schema_migrations (version) VALUES (%s)", (version,)
            )
