"""Schema version 8: ``observed_at`` (issue 26), NULL where it equals ``created_at``.

A version-7 file migrates in place: its records read back with ``observed_at`` equal
to their ``created_at``, the step is recorded, and records written afterwards keep an
observed time of their own, found by the observed window.
"""

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiosqlite
from tests.backends.sqlite._undo import UNDO_TERMS

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore._search.query import plan_query
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from recallstore.backends.sqlite.search import (
    candidates_sql,
    filters_of,
    listing_sql,
    match_expression,
)

_MONDAY = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def _downgrade_to_7(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.executescript(
            f"""
            BEGIN;
            {UNDO_TERMS}
            ALTER TABLE memory_scope DROP COLUMN observed_us;
            ALTER TABLE memory_records DROP COLUMN observed_at;
            DROP TABLE memory_revisions;
            DELETE FROM schema_migrations WHERE version >= 8;
            PRAGMA user_version = 7;
            COMMIT;
            """
        )
    finally:
        conn.close()


def _sql(db: Path, statement: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(statement).fetchall()
    finally:
        conn.close()


def test_version_8_is_the_eighth_step_and_only_adds_a_column() -> None:
    assert [version for version, _ in MIGRATIONS][7] == 8 <= SCHEMA_VERSION
    (_, statements) = MIGRATIONS[7]
    assert statements == ("ALTER TABLE memory_records ADD COLUMN observed_at TEXT",)


async def test_a_version_7_file_migrates_and_its_records_were_observed_when_saved(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        old = await store.write(
            [MemoryWriteInput(scope={"user": "u"}, content=f"bees {n}") for n in range(3)]
        )
    _downgrade_to_7(db)
    assert "observed_at" not in {row[1] for row in _sql(db, "PRAGMA table_info(memory_records)")}
    async with SqliteMemoryStore(db) as store:
        for record in old:
            assert await store.get(record.id) == record
            assert record.observed_at == record.created_at
        (dated,) = await store.write(
            [MemoryWriteInput(scope={"user": "u"}, content="bees monday", observed_at=_MONDAY)]
        )
        window = MemorySearchQuery(
            scope={"user": "u"}, observed_after=_MONDAY, observed_before=_MONDAY + timedelta(1)
        )
        assert [hit.record.id for hit in await store.search(window)] == [dated.id]
        assert [
            hit.record.id for hit in await store.search(window.model_copy(update={"query": "bees"}))
        ] == [dated.id]
    assert _sql(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert (8,) in _sql(db, "SELECT version FROM schema_migrations")
    # Only the record observed before its save has a value; the rest stay NULL.
    stored = _sql(db, "SELECT id, observed_at FROM memory_records WHERE observed_at IS NOT NULL")
    assert stored == [(dated.id, "2025-03-03T09:00:00.000000Z")]


async def test_a_windowed_scoped_search_and_listing_keep_to_the_scopes_index(
    tmp_path: Path,
) -> None:
    """The window is one more per-row condition: a scoped search is still answered inside
    FTS5 (the scope in the MATCH), a scoped listing still walks the pair's index."""
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        await store.write(
            [
                MemoryWriteInput(
                    scope={"tenant": "t", "user": f"u{i % 50}"},
                    content=f"tea {i}",
                    observed_at=_MONDAY + timedelta(hours=i),
                )
                for i in range(500)
            ]
        )
        window: dict[str, Any] = {
            "observed_after": _MONDAY,
            "observed_before": _MONDAY + timedelta(days=7),
        }
        hits = await store.search(
            MemorySearchQuery(query="tea", scope={"user": "u7"}, limit=100, **window)
        )
        assert sorted(int(hit.record.content.split()[1]) for hit in hits) == [
            i for i in range(7, 168, 50)
        ]
    query = MemorySearchQuery(query="tea", scope={"user": "u7"}, **window)
    expression = match_expression(query.scope, plan_query("tea"), "tea")
    sql, params = candidates_sql(query, datetime.now(UTC), ordered=False)
    listing = MemorySearchQuery(scope={"user": "u7"}, **window)
    listing_text, listing_params = listing_sql(listing, datetime.now(UTC), filters_of(listing), 0)
    async with aiosqlite.connect(db) as conn:
        async with conn.execute(f"EXPLAIN QUERY PLAN {sql}", [expression, *params, 10]) as cursor:
            search_plan = "\n".join(str(row[3]) for row in await cursor.fetchall())
        async with conn.execute(f"EXPLAIN QUERY PLAN {listing_text}", listing_params) as cursor:
            listing_plan = "\n".join(str(row[3]) for row in await cursor.fetchall())
    assert "SCAN memory_fts VIRTUAL TABLE" in search_plan, search_plan
    assert "memory_scope" not in search_plan, search_plan
    assert "SEARCH d USING" in listing_plan, listing_plan
    assert "SCAN r" not in listing_plan, listing_plan
