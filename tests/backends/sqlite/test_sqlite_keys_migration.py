"""A SQLite file of schema version 1 (before idempotency keys) is migrated in place."""

import sqlite3
from pathlib import Path

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, TOKENIZERS


def _version_1_file(db: Path) -> None:
    """The file recallstore wrote before the idempotency step, with one record in it."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for statement in MIGRATIONS[0][1]:
            conn.execute(statement.format(tokenize=TOKENIZERS["porter"]))
        conn.execute("INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00.000000Z')")
        conn.execute(
            "INSERT INTO memory_records (id, kind, content, scope, tags, supports, created_at, "
            "updated_at) VALUES ('old1', 'fact', 'Ana keeps bees', '{\"user\":\"ana\"}', '[]', "
            "'[]', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')"
        )
        conn.execute("INSERT INTO memory_scope SELECT seq, 'user', 'ana' FROM memory_records")
        conn.execute("PRAGMA user_version = 1")
    finally:
        conn.close()


async def test_a_version_1_file_gains_keys_in_place_and_keeps_its_records(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    _version_1_file(db)
    scope = {"user": "ana"}
    async with SqliteMemoryStore(db) as store:
        old = await store.get("old1")
        assert old is not None
        assert old.content == "Ana keeps bees"
        assert old.idempotency_key is None
        hits = await store.search(MemorySearchQuery(query="bees", scope=scope))
        assert [hit.record.id for hit in hits] == ["old1"]
        keyed = MemoryWriteInput(scope=scope, content="Ana keeps wasps", idempotency_key="e1")
        (first,) = await store.write([keyed])
        (again,) = await store.write([keyed])
        assert again == first
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        versions = conn.execute("SELECT version FROM schema_migrations ORDER BY version")
        assert [row[0] for row in versions] == [version for version, _ in MIGRATIONS]
        # The unique index is the last line of defence against two valid keyed records.
        indexes = conn.execute("PRAGMA index_list(memory_records)").fetchall()
        assert any(row[1] == "memory_records_idempotency" and row[2] == 1 for row in indexes)
    finally:
        conn.close()


async def test_two_stores_on_one_file_keep_one_record_per_key(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    keyed = MemoryWriteInput(scope={"user": "ana"}, content="Ana keeps bees", idempotency_key="e1")
    async with SqliteMemoryStore(db) as one, SqliteMemoryStore(db) as two:
        (first,) = await one.write([keyed])
        (second,) = await two.write([keyed])
        assert second == first
        listing = await two.search(MemorySearchQuery(include_invalidated=True))
        assert [hit.record.id for hit in listing] == [first.id]
