"""Schema version 7: scope rows kept by pair, a record's rows removed by trigger.

A file of version 6 migrates with every scope row kept; afterwards deleting or
forgetting records leaves no scope row behind, whatever their creation time, so a
record that later takes a deleted record's seq never inherits its scope.
"""

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.backends.sqlite._undo import UNDO_TERMS

from recallstore import MemorySearchQuery, MemoryValidationError, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from recallstore.store import new_record_id, record_from_input

_TIMES = [
    datetime(1000, 1, 1, tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(2000, 2, 29, 12, 0, 0, 1, tzinfo=UTC),
    datetime(2026, 12, 1, 8, 30, 15, 123_456, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
]


def _scope_rows(db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT record_seq, key, value, created_us FROM memory_scope ORDER BY record_seq, key"
        ).fetchall()
    finally:
        conn.close()


def _downgrade_to_6(db: Path) -> None:
    """The same file as version 6 kept it: scope rows by record, their pair index, the
    foreign key's cascade and no trigger (rows as version 6 wrote them)."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.executescript(
            f"""
            BEGIN;
            {UNDO_TERMS}
            CREATE TABLE old_scope (
                record_seq INTEGER NOT NULL REFERENCES memory_records (seq) ON DELETE CASCADE,
                key TEXT NOT NULL,
                value TEXT NOT NULL, created_us INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (record_seq, key)
            ) WITHOUT ROWID;
            INSERT INTO old_scope SELECT record_seq, key, value, created_us FROM memory_scope;
            DROP TRIGGER memory_records_scope_delete;
            DROP TABLE memory_scope;
            ALTER TABLE old_scope RENAME TO memory_scope;
            CREATE INDEX memory_scope_recency ON memory_scope (key, value, created_us, record_seq);
            ALTER TABLE memory_records DROP COLUMN observed_at;
            DROP TABLE memory_revisions;
            DELETE FROM schema_migrations WHERE version >= 7;
            PRAGMA user_version = 6;
            COMMIT;
            """
        )
    finally:
        conn.close()


def test_version_7_is_the_seventh_step() -> None:
    assert [version for version, _ in MIGRATIONS][6] == 7 <= SCHEMA_VERSION


async def test_a_version_6_file_migrates_keeping_every_scope_row(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        written = await store.write(
            [
                MemoryWriteInput(scope={"tenant": "t", "user": f"u{n % 3}"}, content=f"bees {n}")
                for n in range(30)
            ]
        )
    before = _scope_rows(db)
    _downgrade_to_6(db)
    assert _scope_rows(db) == before
    async with SqliteMemoryStore(db) as store:
        listed = await store.search(MemorySearchQuery(scope={"user": "u1"}, limit=50))
        assert [hit.record.id for hit in listed] == [r.id for r in reversed(written[1::3])]
        assert _scope_rows(db) == before
        await store.delete(written[4].id)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == (
            SCHEMA_VERSION,
        )
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema")}
    finally:
        conn.close()
    assert "memory_scope_recency" not in names
    assert "memory_records_scope_delete" in names
    deleted_seq = 5  # the fifth record written
    assert _scope_rows(db) == [row for row in before if row[0] != deleted_seq]
    assert len(_scope_rows(db)) == len(before) - 2


async def test_deleting_leaves_no_scope_row_at_any_creation_time(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        await store.write([MemoryWriteInput(scope={"user": "kept"}, content="stays")])
        kept = _scope_rows(db)
        records = [
            record_from_input(
                MemoryWriteInput(scope={"tenant": "t", "user": "gone"}, content=f"fact {n}"),
                record_id=new_record_id(),
                now=moment,
            )
            for n, moment in enumerate(_TIMES)
        ]
        await store.import_records(records)
        assert len(_scope_rows(db)) == len(kept) + 2 * len(_TIMES)
        for record in records[:3]:
            await store.delete(record.id)
        assert await store.forget({"user": "gone"}) == len(_TIMES) - 3
    assert _scope_rows(db) == kept


async def test_a_record_taking_a_deleted_records_seq_never_inherits_its_scope(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        (newest,) = await store.write([MemoryWriteInput(scope={"user": "ana"}, content="a")])
        await store.delete(newest.id)
        (next_one,) = await store.write([MemoryWriteInput(scope={"user": "bob"}, content="b")])
        assert await store.search(MemorySearchQuery(scope={"user": "ana"})) == []
        listed = await store.search(MemorySearchQuery(scope={"user": "bob"}))
        assert [hit.record.id for hit in listed] == [next_one.id]
    ((seq, key, value, _),) = _scope_rows(db)
    assert (seq, key, value) == (1, "user", "bob")


def test_a_timestamp_before_the_year_1000_is_refused_by_name() -> None:
    with pytest.raises(MemoryValidationError, match="expires_at: timestamps before the year 1000"):
        MemoryWriteInput(
            scope={"user": "ana"}, content="old", expires_at=datetime(999, 12, 31, tzinfo=UTC)
        )
