"""Ranking statistics kept in the write's transaction (schema version 12, issue 38).

``memory_terms`` must hold, term for term, what FTS5's own ``fts5vocab`` counts for the
content column, after every kind of change (batch and single writes, concurrent writers,
supersede, invalidate, delete, forget, import, a content change made by hand, another
process's writes), with each SQLite driver; a search reads it, never the vocabulary
walk, and ranks as a store opened afresh does. A version-10 file is migrated and its
table filled from its index, with the index's tokenizer whatever the opener asks for.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.backends.sqlite._undo import UNDO_TERMS

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends._tuning import tune
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.driver import choose_sqlite
from recallstore.backends.sqlite.schema import MIGRATIONS, SCHEMA_VERSION

FAST = choose_sqlite("auto")
DRIVERS = [
    pytest.param("stdlib", id="stdlib"),
    pytest.param(
        FAST.name,
        id="secure-delete",
        marks=pytest.mark.skipif(
            FAST.name == "stdlib", reason="no SQLite 3.42+ driver (the 'sqlite' extra)"
        ),
    ),
]

# Stems, folding and non-ASCII as FTS5 indexes them: "running"/"runs" share a Porter
# stem, "Straße" keeps its ß in FTS5 (Python's folding would make it "strasse"), the
# ligature "ﬁ" stays one character, "naïve" loses its diaeresis.
TEXTS = [
    "Ana is running in the garden",
    "the garden runs wild; Straße café",
    "naïve ﬁsh in the GARDEN, don't",
    "日本語 garden 42 x_y",
    "bees",
]


def _sql(db: Path, statement: str, driver: str = FAST.name) -> list[tuple[Any, ...]]:
    conn = choose_sqlite(driver).module.connect(str(db))
    try:
        return list(conn.execute(statement).fetchall())
    finally:
        conn.close()


def _counts(db: Path, driver: str) -> tuple[dict[str, int], dict[str, int]]:
    """(what fts5vocab counts for the content column, what memory_terms holds)."""
    walked = _sql(db, "SELECT term, doc FROM memory_fts_vocab WHERE col = 'content'", driver)
    kept = _sql(db, "SELECT term, docs FROM memory_terms", driver)
    return dict(walked), dict(kept)


def _assert_kept(db: Path, driver: str) -> dict[str, int]:
    walked, kept = _counts(db, driver)
    assert kept == walked
    return kept


def _inputs(user: str, count: int = 1, text: int = 0) -> list[MemoryWriteInput]:
    return [
        MemoryWriteInput(scope={"user": user}, content=f"{TEXTS[(text + n) % len(TEXTS)]} {n}")
        for n in range(count)
    ]


async def _scores(store: SqliteMemoryStore, text: str, user: str) -> list[tuple[str, float]]:
    hits = await store.search(MemorySearchQuery(query=text, scope={"user": user}, limit=20))
    return [(hit.record.id, hit.score or 0.0) for hit in hits]


def test_version_12_keeps_the_counts() -> None:
    assert SCHEMA_VERSION >= 12
    statements = dict(MIGRATIONS)[12]
    assert statements[0].startswith("CREATE TABLE memory_terms ")


@pytest.mark.parametrize("driver", DRIVERS)
async def test_the_counts_follow_every_change(tmp_path: Path, driver: str) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db, sqlite_driver=driver) as store:
        batch = await store.write(_inputs("ana", 40))
        assert _assert_kept(db, driver)["garden"] == 32  # 4 texts in 5
        singles = [(await store.write(_inputs("bo", text=n)))[0] for n in range(5)]
        # Concurrent writers share one transaction (group commit).
        together = await asyncio.gather(*(store.write(_inputs(f"c{n}", text=n)) for n in range(16)))
        _assert_kept(db, driver)
        # Superseded and invalidated records stay in the index, and in the counts.
        (newer,) = await store.write(
            [MemoryWriteInput(scope={"user": "bo"}, content="bees", supersedes=singles[0].id)]
        )
        await store.invalidate(singles[1].id, reason="wrong")
        assert _assert_kept(db, driver)["bee"] == 8 + 1 + 3 + 1
        await store.delete(batch[0].id)
        await store.delete(newer.id)
        _assert_kept(db, driver)
        await store.forget({"user": "ana"})
        kept = _assert_kept(db, driver)
        assert "wild" in kept  # bo's and the c-users' records still hold it
        await store.import_records(batch[:10])
        _assert_kept(db, driver)
        for records in together:
            await store.delete(records[0].id)
        for record in [*singles, *batch[:10]]:
            await store.delete(record.id)
    # Every record gone: no term is left behind (S5), and none counted twice.
    assert _counts(db, driver) == ({}, {})


@pytest.mark.parametrize("driver", DRIVERS)
async def test_a_content_change_made_by_hand_is_counted(tmp_path: Path, driver: str) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db, sqlite_driver=driver) as store:
        (record,) = await store.write(_inputs("ana"))
    conn = choose_sqlite(driver).module.connect(str(db), isolation_level=None)
    try:
        changed = "UPDATE memory_records SET content = 'bees and honey' WHERE id = ?"
        conn.execute(changed, (record.id,))
        conn.execute('UPDATE memory_records SET scope = \'{"user":"bo"}\'')  # content unchanged
    finally:
        conn.close()
    assert _assert_kept(db, driver) == {"bee": 1, "and": 1, "honei": 1}


async def test_a_search_reads_the_kept_counts_not_the_index_walk(tmp_path: Path) -> None:
    """After a write, the statistics are read from memory_terms (one look-up a stem)
    rather than fts5vocab, which walks each stem's whole doclist in the store."""
    statements: list[str] = []
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        await store.write(_inputs("others", 30))
        await store.write(_inputs("me", 3))
        await _scores(store, "garden", "me")
        await store.write(_inputs("others", text=1))  # another scope
        assert store._conn is not None
        await store._conn.set_trace_callback(statements.append)
        await _scores(store, "garden café", "me")
    assert any("FROM memory_terms WHERE" in statement for statement in statements)
    assert not any("memory_fts_vocab" in statement for statement in statements)


_WRITER = """
import asyncio, sys
from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

async def main() -> None:
    async with SqliteMemoryStore(sys.argv[1]) as store:
        far = {"user": "far"}
        await store.write([MemoryWriteInput(scope=far, content="garden bees") for _ in range(7)])
        for record in await store.write([MemoryWriteInput(scope=far, content="café")]):
            await store.delete(record.id)

asyncio.run(main())
"""


async def test_another_process_writes_are_counted_by_the_next_search(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        await store.write(_inputs("ana", 12))
        before = await _scores(store, "garden café bees", "ana")
        writer = await asyncio.create_subprocess_exec(sys.executable, "-c", _WRITER, str(db))
        assert await asyncio.wait_for(writer.wait(), timeout=120) == 0
        after = await _scores(store, "garden café bees", "ana")
        async with SqliteMemoryStore(db) as fresh:
            assert after == await _scores(fresh, "garden café bees", "ana")
    assert before != after  # more records, and more of them hold "garden"
    assert _assert_kept(db, FAST.name)["garden"] == 10 + 7


def _downgrade_to_10(db: Path) -> None:
    conn = choose_sqlite(FAST.name).module.connect(str(db), isolation_level=None)
    try:
        conn.executescript(
            f"""
            BEGIN;
            {UNDO_TERMS}
            DELETE FROM schema_migrations WHERE version > 10;
            PRAGMA user_version = 10;
            COMMIT;
            """
        )
    finally:
        conn.close()


async def test_a_version_10_file_is_migrated_and_its_counts_filled(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        written = await store.write(_inputs("ana", 25) + _inputs("bo", 5))
        await store.delete(written[0].id)
        expected = await _scores(store, "garden café naïve", "ana")
    _downgrade_to_10(db)
    assert "memory_terms" not in {row[0] for row in _sql(db, "SELECT name FROM sqlite_schema")}
    async with SqliteMemoryStore(db) as store:
        assert await _scores(store, "garden café naïve", "ana") == expected
        _assert_kept(db, FAST.name)
        await store.write(_inputs("cy", 3))
        await store.forget({"user": "bo"})
        _assert_kept(db, FAST.name)
    assert _sql(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert (12,) in _sql(db, "SELECT version FROM schema_migrations")


async def test_the_migration_tokenises_as_the_files_index_does(tmp_path: Path) -> None:
    """A file made with the unicode61 tokenizer, opened by a store asking for porter:
    new records are counted as unicode61 indexes them ("running", not "run")."""
    db = tmp_path / "memory.db"
    async with tune(SqliteMemoryStore(db), tokenizer="unicode61") as store:
        await store.write(_inputs("ana", 3))
    _downgrade_to_10(db)
    async with SqliteMemoryStore(db) as store:
        await store.write([MemoryWriteInput(scope={"user": "bo"}, content="walking runners")])
    kept = _assert_kept(db, FAST.name)
    assert {"running", "walking", "runners"} <= set(kept)
    assert "run" not in kept
