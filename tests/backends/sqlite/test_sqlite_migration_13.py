"""Schema version 13 (issue 39): a version-12 file gains the evolution ledger, its records
untouched, and corroborate/promote work on them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.backends.sqlite._undo import UNDO_LEDGER

from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.schema import SCHEMA_VERSION
from recallstore.records import MemoryTarget, Provenance
from recallstore.store import PromotionGate

_ANA = {"user": "ana"}


def _tables(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    finally:
        conn.close()
    return {str(row[0]) for row in rows}


def _downgrade_to_12(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.executescript(
            f"""
            BEGIN;
            {UNDO_LEDGER}
            DELETE FROM schema_migrations WHERE version >= 13;
            PRAGMA user_version = 12;
            COMMIT;
            """
        )
    finally:
        conn.close()


async def test_a_version_12_file_gains_the_ledger_and_its_records_learn(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        (record,) = await store.write(
            [
                MemoryWriteInput(
                    scope=_ANA,
                    content="Ana wants metric units",
                    provenance=Provenance(conversation_id="c-1"),
                )
            ]
        )
    _downgrade_to_12(db)
    assert "memory_ledger" not in _tables(db)
    async with SqliteMemoryStore(db) as store:
        assert "memory_ledger" in _tables(db)
        assert await store.get(record.id) == record
        for conversation in ("c-2", "c-3"):
            await store.corroborate(
                _ANA, record.id, Provenance(conversation_id=conversation), actor="h", reason="r"
            )
        promoted = await store.promote(
            _ANA,
            record.id,
            MemoryTarget(section="background"),
            gate=PromotionGate(approval_for=frozenset()),
            actor="host",
            reason="taught thrice",
        )
    async with SqliteMemoryStore(db) as reopened:
        assert await reopened.promotions(_ANA) == [promoted]
        assert [row.action for row in await reopened.ledger(_ANA)] == [
            "corroborate",
            "corroborate",
            "promote",
        ]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 13
    finally:
        conn.close()
