"""The Postgres backend's schema: the migration ladder and how it is applied.

Applied versions are rows of ``<schema>.schema_migrations``. The ladder is
append-only: a released step is never edited, a change is a new entry. A database
whose version is newer than ``SCHEMA_VERSION`` is refused before anything is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from recallstore.backends.postgres.journal import trace_indexes
from recallstore.backends.postgres.ledger import migration as ledger_migration
from recallstore.backends.postgres.lexemes import (
    MAX_LEXEME_BYTES,
    SCOPE_LEXEME_PREFIX,
    index_stems,
    listed_lexemes,
)
from recallstore.backends.postgres.pgvector import deferred_key_migration
from recallstore.backends.postgres.scope_order import (
    listed_migration as scope_order_listed_migration,
)
from recallstore.backends.postgres.scope_order import migration as scope_order_migration
from recallstore.backends.postgres.stored import candidates_migration as stored_candidates_migration
from recallstore.backends.postgres.stored import migration as stored_migration
from recallstore.backends.postgres.vectors import migration as vector_migration
from recallstore.backends.postgres.vectors import storage_migration
from recallstore.errors import StoreIncompatibleError
from recallstore.store import store_id_from

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "SCHEMA_VERSION",
    "SEARCH_TEXT_STATISTICS",
    "installed_version",
    "migrate",
    "migrations",
    "read_store_id",
]

Step = str | Callable[["AsyncConnection[Any]", str], Awaitable[None]]
"""One migration step: a statement, or a coroutine given the connection and schema
(for what SQL cannot compute, such as our Porter stems)."""

_RESTEM_PAGE: Final = 1_000


async def _restem(conn: AsyncConnection[Any], schema: str) -> None:
    """Recompute every record's search columns from our own stems, a page at a time."""
    after = ""
    while True:
        cursor = await conn.execute(
            f"SELECT id, content FROM {schema}.memory_records WHERE id > %s ORDER BY id LIMIT %s",
            (after, _RESTEM_PAGE),
        )
        rows = await cursor.fetchall()
        if not rows:
            return
        async with conn.cursor() as update:
            await update.executemany(
                f"UPDATE {schema}.memory_records SET search_text = array_to_tsvector(%s::text[]), "
                "search_length = %s WHERE id = %s",
                [(*index_stems(content), record_id) for record_id, content in rows],
            )
        after = rows[-1][0]


def _totals_trigger(schema: str, event: str, table: str, sign: str) -> list[str]:
    function = f"{schema}.memory_totals_{event.lower()}"
    return [
        f"""CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE {schema}.memory_totals SET
                documents = documents {sign} (SELECT count(*) FROM {table}),
                tokens = tokens {sign} (SELECT coalesce(sum(search_length), 0) FROM {table}),
                version = version + 1;
            RETURN NULL;
        END $$""",
        f"CREATE TRIGGER memory_totals_{event.lower()} AFTER {event} ON {schema}.memory_records "
        f"REFERENCING {'NEW' if sign == '+' else 'OLD'} TABLE AS {table} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
    ]


def _stems_trigger(
    schema: str,
    event: str,
    table: str,
    sign: str,
    *,
    replace: bool = False,
    listed: bool = False,
) -> list[str]:
    # Named after the totals trigger so it fires second: the totals row lock taken
    # first serialises writers, so two never lock the same stems in turn (deadlock).
    # ``replace`` (version 5) redefines the function to count stems only, not the
    # scope pairs' lexemes search_text also holds from then on; ``listed`` (version
    # 17, with ``replace``) reads the lexemes as listed_lexemes does.
    function = f"{schema}.memory_totals_{event.lower()}_stems"
    only_stems = f"WHERE stem NOT LIKE '{SCOPE_LEXEME_PREFIX}%' " if replace else ""
    counted = (
        f"SELECT stem, count(*) AS documents FROM {table}, "
        f"unnest(tsvector_to_array(search_text)) AS stem {only_stems}"
        "GROUP BY stem ORDER BY stem"
    )
    if listed:
        counted = (
            f"SELECT stem, count(*) AS documents FROM ({listed_lexemes('stem', table)}) AS listed "
            f"{only_stems}GROUP BY stem ORDER BY stem"
        )
    change = (
        f"INSERT INTO {schema}.memory_stems AS s (stem, documents) {counted} "
        "ON CONFLICT (stem) DO UPDATE SET documents = s.documents + excluded.documents"
        if sign == "+"
        else f"UPDATE {schema}.memory_stems AS s SET documents = s.documents - c.documents "
        f"FROM ({counted}) AS c WHERE s.stem = c.stem; "
        # A stem no record holds any more leaves the table, as its record did (S5).
        f"DELETE FROM {schema}.memory_stems AS s USING ({counted}) AS c "
        "WHERE s.stem = c.stem AND s.documents <= 0"
    )
    definition = f"""CREATE {"OR REPLACE " if replace else ""}FUNCTION {function}()
        RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            {change};
            RETURN NULL;
        END $$"""
    if replace:
        return [definition]
    return [
        definition,
        f"CREATE TRIGGER memory_totals_{event.lower()}_stems AFTER {event} "
        f"ON {schema}.memory_records REFERENCING {'NEW' if sign == '+' else 'OLD'} TABLE "
        f"AS {table} FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
    ]


def migrations(schema: str) -> list[Sequence[Step]]:
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
        # Version 2: the same stems as every backend (recallstore._search.query), and the
        # store-wide BM25 totals kept by triggers, so a search never counts the table.
        [
            f"ALTER TABLE {schema}.memory_records ADD COLUMN search_length integer NOT NULL "
            "DEFAULT 0",
            _restem,
            f"DROP TEXT SEARCH CONFIGURATION {schema}.memory_text",
            f"DROP TEXT SEARCH DICTIONARY {schema}.english_stem_all",
            f"""CREATE TABLE {schema}.memory_totals (
                only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
                documents bigint NOT NULL,
                tokens bigint NOT NULL,
                version bigint NOT NULL
            )""",
            f"INSERT INTO {schema}.memory_totals "
            f"SELECT true, count(*), coalesce(sum(search_length), 0), 0 "
            f"FROM {schema}.memory_records",
            *_totals_trigger(schema, "INSERT", "added", "+"),
            *_totals_trigger(schema, "DELETE", "removed", "-"),
            f"""CREATE TABLE {schema}.memory_stems (
                stem text PRIMARY KEY,
                documents bigint NOT NULL
            )""",
            f"INSERT INTO {schema}.memory_stems "
            f"SELECT stem, count(*) FROM {schema}.memory_records, "
            "unnest(tsvector_to_array(search_text)) AS stem GROUP BY stem",
            *_stems_trigger(schema, "INSERT", "added", "+"),
            *_stems_trigger(schema, "DELETE", "removed", "-"),
        ],
        # Idempotency keys (S16): one valid record per (scope, key).
        [
            f"ALTER TABLE {schema}.memory_records ADD COLUMN idempotency_key text",
            f"CREATE UNIQUE INDEX memory_records_idempotency ON {schema}.memory_records "
            "(scope, idempotency_key) WHERE idempotency_key IS NOT NULL AND invalid_at IS NULL",
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
        # Version 5 (issue 10): each scope pair is also a lexeme of search_text, so a
        # scoped search or listing asks one GIN index for ``pair & pair & (stem | …)``
        # and its cost follows the scope's records; with ``scope @>`` on the jsonb
        # index the text's bitmap (every record holding a query stem) was built whole
        # and intersected with the scope's. The statistics keep counting stems only.
        # GIN's pending list (new entries not yet merged into the index, up to 4 MB by
        # default) is read whole by every search until a vacuum merges it: at 1M
        # records that was 450 pages and most of a scoped search's time, so it is kept
        # to the smallest size Postgres allows; writers merge it as it fills.
        [
            f"ALTER INDEX {schema}.memory_records_text SET (gin_pending_list_limit = 64)",
            *_stems_trigger(schema, "INSERT", "added", "+", replace=True),
            *_stems_trigger(schema, "DELETE", "removed", "-", replace=True),
            f"""UPDATE {schema}.memory_records SET search_text = search_text || array_to_tsvector(
                ARRAY(
                    SELECT lexeme FROM (
                        SELECT '{SCOPE_LEXEME_PREFIX}' || encode(convert_to(key, 'UTF8'), 'hex')
                            || '=' || encode(convert_to(value, 'UTF8'), 'hex') AS lexeme
                        FROM jsonb_each_text(scope)
                    ) AS pairs WHERE octet_length(lexeme) <= {MAX_LEXEME_BYTES}
                )
            )""",
            f"SELECT gin_clean_pending_list('{schema}.memory_records_text'::regclass)",
        ],
        # Hybrid search: vectors beside the records, and the embedder that made them.
        vector_migration(schema),
        # Payloads as ``json``, kept as written: ``jsonb`` stores numbers as numeric,
        # so 1e16 and 1e308 came back as ints and -0.0 as 0.0. Nothing queries inside
        # a payload, so nothing needed jsonb's operators or index.
        [f"ALTER TABLE {schema}.memory_records ALTER COLUMN payload TYPE json USING payload::json"],
        # Memories in time (issue 26): when the remembered thing was said or happened;
        # NULL means at the save (created_at), so adding it rewrites no row.
        [f"ALTER TABLE {schema}.memory_records ADD COLUMN observed_at timestamptz"],
        # Consolidation plans (issue 27): the "revise" extension keeps each applied plan
        # and what every record it changed held before, so the plan can be reverted.
        [
            f"""CREATE TABLE {schema}.memory_revisions (
                id text PRIMARY KEY,
                scope text NOT NULL,
                created_at text NOT NULL,
                body text NOT NULL,
                undo text NOT NULL,
                reverted_at text
            )"""
        ],
        # Version 10 (issue 30): where the vectors live, real[] or pgvector.
        storage_migration(schema),
        # 11: pgvector's foreign key deferred, so a write's HNSW inserts come first.
        deferred_key_migration(schema),
        # 12 (issue 36): a delete finds its record's journal rows by index.
        trace_indexes(schema),
        # 13 (issue 39): the evolution ledger of the "promote" extension.
        ledger_migration(schema),
        # 14 (issue 42): scoped listings newest first by a btree (postgres.scope_order).
        scope_order_migration(schema),
        # 15 (issue 42): a finer sample of search_text's lexemes for the planner. A
        # lexeme missing from the column's most common elements is estimated at half
        # the rarest one's frequency; at the default target (100) that was 6,671 rows
        # for a user's scope pair at 10M records (it holds 100), so, before version 14,
        # a one-pair scope's newest-10 listing walked the recency index (325 ms, against
        # 3 ms at 1M). At 1,000 the estimate is 434. One-pair listings read
        # memory_scope_order since version 14; every other plan over search_text
        # (searches, listings of several pairs) reads the same estimates.
        # ANALYZE samples 300,000 rows for it (8 s at 10M).
        [
            f"ALTER TABLE {schema}.memory_records ALTER COLUMN search_text "
            f"SET STATISTICS {SEARCH_TEXT_STATISTICS}",
            f"ANALYZE {schema}.memory_records",
        ],
        # 16 (issue 42): a scoped search's and a one-pair listing's statements as
        # functions, planned once per server connection behind a transaction pooler
        # (postgres.stored). A changed statement renames its function: append a step
        # that creates it again.
        stored_migration(schema),
        # 17 (issue 42): the triggers that keep memory_stems and memory_scope_order read
        # each row's lexemes as a list (listed_lexemes): the same rows in about four
        # fifths of the time, where a fifth of a 1,000-record write's went to them.
        [
            *_stems_trigger(schema, "INSERT", "added", "+", replace=True, listed=True),
            *_stems_trigger(schema, "DELETE", "removed", "-", replace=True, listed=True),
            *scope_order_listed_migration(schema),
        ],
        # 18 (issue 42): the scoped search's function again (its statement changed: the
        # feedback words' stems are counted only when the caller's counts are stale).
        stored_candidates_migration(schema),
        # 19 (issue 42): both functions again (their statements changed: a scope's common
        # pairs are checked on the rows the GIN index finds by its rare ones,
        # postgres.scope_terms).
        stored_migration(schema),
    ]


SEARCH_TEXT_STATISTICS: Final = 1_000
"""The planner's statistics target of ``memory_records.search_text`` (schema version 15)."""

SCHEMA_VERSION: Final = 19
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


async def read_store_id(conn: AsyncConnection[Any], schema: str) -> str | None:
    """The store id of ``schema`` (``store_id_from``): from the schema's name and the
    instant it was first migrated (its oldest ``schema_migrations`` row)."""
    cursor = await conn.execute(
        f"SELECT applied_at FROM {schema}.schema_migrations ORDER BY version LIMIT 1"
    )
    row = await cursor.fetchone()
    return None if row is None else store_id_from(f"postgres:{schema}:{row[0].isoformat()}")


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
            for step in steps:
                if isinstance(step, str):
                    await conn.execute(step)
                else:
                    await step(conn, schema)
            await conn.execute(
                f"INSERT INTO {schema}.schema_migrations (version) VALUES (%s)", (version,)
            )
