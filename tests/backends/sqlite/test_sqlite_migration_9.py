"""Migration 9 (issue 27): a version-8 file gains the ``memory_revisions`` table in place,
keeps its records, and can then keep and revert a consolidation plan."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.backends.sqlite._undo import UNDO_TERMS

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from recallstore.consolidation import apply_plan, consolidate, revert_plan
from recallstore.records import MemoryWriteInput

ANA = {"user": "ana"}


def test_version_9_is_the_ninth_step() -> None:
    assert [version for version, _ in MIGRATIONS][8] == 9 <= SCHEMA_VERSION


async def test_a_version_8_file_gains_revisions_and_keeps_its_records(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        written = await store.write([MemoryWriteInput(scope=ANA, content="Has a cat.")] * 2)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.executescript(
            f"""
            BEGIN;
            {UNDO_TERMS}
            ALTER TABLE memory_scope DROP COLUMN observed_us;
            DROP TABLE memory_revisions;
            DELETE FROM schema_migrations WHERE version >= 9;
            PRAGMA user_version = 8;
            COMMIT;
            """
        )
    finally:
        conn.close()
    async with SqliteMemoryStore(db) as store:
        assert [await store.get(r.id) for r in written] == written
        plan = await consolidate(store, ANA)
        await apply_plan(store, plan)
        await revert_plan(store, plan.id)
        assert [await store.get(r.id) for r in written] == written
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("SELECT count(*) FROM memory_revisions").fetchone() == (1,)
    finally:
        conn.close()
