"""A SQLite file of schema version 4 (written before issue 10's write path) migrates to 5.

Version 5 drops the FTS insert trigger (the store inserts FTS rows itself) and gives
scope rows their record's time, so a scope's listing is read newest first from its
index. Records written by version 4 must list, search and delete as before.
"""

import sqlite3
from datetime import datetime
from pathlib import Path

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.insert import recency_key
from recallstore.backends.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, TOKENIZERS

_TIMES = [
    "2026-01-01T00:00:00.000000Z",
    "2026-01-01T00:00:00.000001Z",
    "2026-03-04T05:06:07.891011Z",
    "1999-12-31T23:59:59.999999Z",
]


def _version_4_file(db: Path) -> None:
    """What recallstore wrote at schema version 4: records inserted as it inserted them
    (the FTS row by trigger), two scope rows each."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for _, statements in MIGRATIONS[:4]:
            for statement in statements:
                conn.execute(statement.format(tokenize=TOKENIZERS["porter"]))
        for version in range(1, 5):
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, '2026-01-01T00:00:00.000000Z')",
                (version,),
            )
        for number, created in enumerate(_TIMES):
            conn.execute(
                "INSERT INTO memory_records (id, kind, content, scope, tags, supports, "
                "created_at, updated_at) VALUES (?, 'fact', ?, ?, '[]', '[]', ?, ?)",
                (
                    f"old{number}",
                    f"Ana keeps bees number {number}",
                    '{"tenant":"t","user":"ana"}',
                    created,
                    created,
                ),
            )
            conn.execute(
                "INSERT INTO memory_scope SELECT seq, key, value FROM memory_records, "
                "json_each(memory_records.scope) WHERE memory_records.id = ?",
                (f"old{number}",),
            )
        conn.execute("PRAGMA user_version = 4")
    finally:
        conn.close()


async def test_a_version_4_file_migrates_and_its_records_list_and_search(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    _version_4_file(db)
    scope = {"tenant": "t", "user": "ana"}
    async with SqliteMemoryStore(db) as store:
        listed = await store.search(MemorySearchQuery(scope={"user": "ana"}, limit=10))
        newest_first = sorted(range(len(_TIMES)), key=lambda n: _TIMES[n], reverse=True)
        assert [hit.record.id for hit in listed] == [f"old{n}" for n in newest_first]
        hits = await store.search(MemorySearchQuery(query="bees", scope=scope))
        assert {hit.record.id for hit in hits} == {f"old{n}" for n in range(len(_TIMES))}
        (new,) = await store.write([MemoryWriteInput(scope=scope, content="Ana sells honey")])
        hits = await store.search(MemorySearchQuery(query="honey", scope=scope))
        assert [hit.record.id for hit in hits] == [new.id]
        listed = await store.search(MemorySearchQuery(scope={"tenant": "t"}, limit=2))
        assert [hit.record.id for hit in listed] == [new.id, "old2"]
        await store.delete("old1")
        hits = await store.search(MemorySearchQuery(query="bees", scope=scope))
        assert "old1" not in {hit.record.id for hit in hits}
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        versions = conn.execute("SELECT version FROM schema_migrations ORDER BY version")
        assert [row[0] for row in versions] == [version for version, _ in MIGRATIONS]
        # The migration computes created_us in SQL exactly as the store does in Python.
        rows = conn.execute(
            "SELECT r.created_at, s.created_us FROM memory_scope s "
            "JOIN memory_records r ON r.seq = s.record_seq"
        ).fetchall()
        assert len(rows) == 2 * len(_TIMES)  # old1 and its scope rows are gone, new is in
        assert all(us == recency_key(datetime.fromisoformat(text)) for text, us in rows)
        triggers = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema")}
        assert "memory_records_fts_insert" not in triggers
    finally:
        conn.close()
