"""Schema version 11 (issue 36): a version-10 file gains the journal's trace indexes, and
a delete finds its record's journal rows by them, not by reading the journal."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.backends.sqlite._undo import UNDO_TERMS

from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.journal import _CARRIES_TEXT, _CONVERSATION
from recallstore.backends.sqlite.schema import SCHEMA_VERSION
from recallstore.context import call_context
from recallstore.records import Provenance

_INDEXES = {"memory_journal_conversation", "memory_journal_run", "memory_journal_text"}


def _indexes(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    finally:
        conn.close()
    return {str(row[0]) for row in rows}


def _downgrade_to_10(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.executescript(
            f"""
            BEGIN;
            {UNDO_TERMS}
            DROP INDEX memory_journal_conversation;
            DROP INDEX memory_journal_run;
            DROP INDEX memory_journal_text;
            DELETE FROM schema_migrations WHERE version >= 11;
            PRAGMA user_version = 10;
            COMMIT;
            """
        )
    finally:
        conn.close()


async def test_a_version_10_file_gains_the_trace_indexes_and_a_delete_uses_them(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        with call_context(conversation_id="conv-1"):
            (record,) = await store.write(
                [
                    MemoryWriteInput(
                        scope={"user": "ana"},
                        content="gone soon",
                        provenance=Provenance(conversation_id="conv-1"),
                    )
                ]
            )
    _downgrade_to_10(db)
    assert _indexes(db) & _INDEXES == set()
    async with SqliteMemoryStore(db) as store:
        assert _indexes(db) >= _INDEXES
        await store.delete(record.id)
        assert [entry.envelope["conversation_id"] for entry in await store.read_journal()] == [
            None,
            None,
        ]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        plan = " ".join(
            str(row[3])
            for row in conn.execute(
                f"EXPLAIN QUERY PLAN SELECT seq FROM memory_journal WHERE {_CARRIES_TEXT} "
                f"UNION SELECT seq FROM memory_journal WHERE {_CONVERSATION} IN ('x')"
            )
        )
    finally:
        conn.close()
    assert "USING INDEX memory_journal_text" in plan
    assert "USING INDEX memory_journal_conversation" in plan
