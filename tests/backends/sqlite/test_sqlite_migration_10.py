"""Schema version 10: scope rows carry their record's observed time (issue 26).

A version-9 file migrates in place: the scope rows of records observed before their
save get that time (microseconds since 1970), the others stay NULL, as in
``memory_records``. Windowed listings, which now skip out-of-window scope rows
without reading their records, give what the records' own times say, at the
window's edges too; writes and imports fill the column the same way.
"""

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.backends.sqlite._undo import UNDO_TERMS

from recallstore import MemoryRecord, MemorySearchQuery, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.insert import recency_key
from recallstore.backends.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from recallstore.backends.sqlite.search import filters_of, listing_sql

_MONDAY = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
# Before 1970 (negative microseconds), on a window's edges, and a leap day.
_OBSERVED = [
    datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    _MONDAY - _MICRO,
    _MONDAY,
    _MONDAY + timedelta(days=1) - _MICRO,
    _MONDAY + timedelta(days=1),
    datetime(2024, 2, 29, 12, tzinfo=UTC),
]


def _sql(db: Path, statement: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(statement).fetchall()
    finally:
        conn.close()


def _downgrade_to_9(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.executescript(
            f"""
            BEGIN;
            {UNDO_TERMS}
            ALTER TABLE memory_scope DROP COLUMN observed_us;
            DELETE FROM schema_migrations WHERE version >= 10;
            PRAGMA user_version = 9;
            COMMIT;
            """
        )
    finally:
        conn.close()


def _inputs(user: str) -> list[MemoryWriteInput]:
    dated = [
        MemoryWriteInput(scope={"tenant": "t", "user": user}, content=f"dated {n}", observed_at=at)
        for n, at in enumerate(_OBSERVED)
    ]
    return [*dated, MemoryWriteInput(scope={"tenant": "t", "user": user}, content="undated")]


def _scope_times(db: Path) -> dict[tuple[int, str], object]:
    rows = _sql(db, "SELECT record_seq, key, observed_us FROM memory_scope")
    return {(int(str(seq)), str(key)): observed for seq, key, observed in rows}


def _expected(records: list[MemoryRecord]) -> dict[tuple[int, str], object]:
    """Each record's scope rows' observed_us, by (seq, key): seq is the write order."""
    return {
        (seq, key): None
        if record.observed_at == record.created_at
        else recency_key(record.observed_at)
        for seq, record in enumerate(records, start=1)
        for key in record.scope
    }


async def _windowed(store: SqliteMemoryStore, scope: dict[str, str]) -> None:
    """Every half-open window over the observed times lists what the records say."""
    every = [hit.record for hit in await store.search(MemorySearchQuery(scope=scope, limit=100))]
    bounds = sorted({record.observed_at for record in every} | {_MONDAY + timedelta(hours=1)})
    for after in bounds:
        for before in (bound for bound in bounds if bound > after):
            query = MemorySearchQuery(
                scope=scope, observed_after=after, observed_before=before, limit=100
            )
            got = [hit.record.id for hit in await store.search(query)]
            assert got == [record.id for record in every if after <= record.observed_at < before], (
                after,
                before,
            )


def test_version_10_is_the_tenth_step_and_adds_a_scope_column() -> None:
    assert [version for version, _ in MIGRATIONS][9] == 10 <= SCHEMA_VERSION
    (_, statements) = MIGRATIONS[9]
    assert statements[0] == "ALTER TABLE memory_scope ADD COLUMN observed_us INTEGER"


async def test_a_version_9_file_migrates_and_its_scope_rows_get_observed_times(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        old = await store.write(_inputs("ana")) + await store.write(_inputs("bo"))
    _downgrade_to_9(db)
    assert "observed_us" not in {row[1] for row in _sql(db, "PRAGMA table_info(memory_scope)")}
    async with SqliteMemoryStore(db) as store:
        assert _scope_times(db) == _expected(old)
        await _windowed(store, {"user": "ana"})
        await _windowed(store, {"tenant": "t", "user": "bo"})
        new = await store.write(_inputs("cy"))
        assert _scope_times(db) == _expected(old + new)
        await _windowed(store, {"user": "cy"})
    assert _sql(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert (10,) in _sql(db, "SELECT version FROM schema_migrations")


async def test_imported_records_fill_the_scope_column_as_writes_do(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "source.db") as source:
        written = await source.write(_inputs("ana"))
    db = tmp_path / "copy.db"
    async with SqliteMemoryStore(db) as store:
        assert await store.import_records(written) == len(written)
        assert _scope_times(db) == _expected(written)
        await _windowed(store, {"user": "ana"})


async def test_the_window_is_checked_on_the_scope_row_before_the_record_is_read(
    tmp_path: Path,
) -> None:
    """The listing's plan walks the pair's rows, and the window's conditions on the scope
    row are part of that walk: a scope row whose stored time says "out of the window"
    is skipped, so the record behind it is never read (the row here is altered to show
    it; the store itself keeps both times equal)."""
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        (record,) = await store.write(
            [MemoryWriteInput(scope={"user": "ana"}, content="tea", observed_at=_MONDAY)]
        )
        window = MemorySearchQuery(
            scope={"user": "ana"}, observed_after=_MONDAY, observed_before=_MONDAY + _MICRO
        )
        assert [hit.record.id for hit in await store.search(window)] == [record.id]
        sql, params = listing_sql(window, datetime.now(UTC), filters_of(window), 0)
        assert "coalesce(d.observed_us, d.created_us) >= ?" in sql
        plan = "\n".join(str(row[3]) for row in _explain(db, sql, params))
        # The walk starts at the newest row and stops at the window's start.
        assert "SEARCH d USING PRIMARY KEY (key=? AND value=? AND created_us>?)" in plan, plan
        _sql_write(db, "UPDATE memory_scope SET observed_us = observed_us - 1")
        assert await store.search(window) == []


def _explain(db: Path, sql: str, params: list[object]) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
    finally:
        conn.close()


def _sql_write(db: Path, statement: str) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute(statement)
    finally:
        conn.close()
