"""Deleted text leaves the ``-wal`` file once no reader holds a snapshot from before the delete.

A reader in the middle of a read transaction that began before the delete may still
read the old pages, so SQLite cannot empty the WAL under it; the store must not stall
the delete waiting for it either. When that read ends, the bytes must go: at the
store's next call, at its close, or by the background retry without any call.
"""

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends.sqlite import BUSY_TIMEOUT_SECONDS, SqliteMemoryStore, wal

SECRET = "the vault code is quillfeather zanzibarite"
WORDS = [SECRET, "quillfeather", "zanzibarite"]


def _leaks(db: Path) -> list[str]:
    """The secret's words found in the bytes of the database file or its -wal."""
    blob = b"".join(
        path.read_bytes() for path in (db, db.with_name(db.name + "-wal")) if path.exists()
    )
    return [word for word in WORDS if word.encode() in blob]


@contextmanager
def _reader_holding_a_snapshot(db: Path) -> Iterator[None]:
    """Another connection in the middle of a read transaction (e.g. an export)."""
    reader = sqlite3.connect(db, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM memory_records").fetchall()
        yield
        reader.execute("COMMIT")
    finally:
        reader.close()


async def _write_and_delete_under_a_reader(store: SqliteMemoryStore, db: Path) -> None:
    await store.write([MemoryWriteInput(scope={"u": "1"}, content=f"note {i}") for i in range(20)])
    [secret] = await store.write([MemoryWriteInput(scope={"u": "1"}, content=SECRET)])
    with _reader_holding_a_snapshot(db):
        started = time.monotonic()
        await store.delete(secret.id)
        # The delete does not wait out the busy timeout for the reader.
        assert time.monotonic() - started < BUSY_TIMEOUT_SECONDS / 2
        assert await store.get(secret.id) is None
        # The reader may still read its snapshot, so the old pages are still there.
        assert _leaks(db)


async def test_the_next_call_after_the_reader_ends_removes_the_bytes(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as other, SqliteMemoryStore(db) as store:
        await _write_and_delete_under_a_reader(store, db)
        await store.search(MemorySearchQuery(query="note"))
        assert _leaks(db) == []
        assert (await other.search(MemorySearchQuery(limit=100)))[0].record.content == "note 19"


async def test_closing_the_store_after_the_reader_ends_removes_the_bytes(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    # Another store keeps the file open, so SQLite's own last-close checkpoint does not run.
    async with SqliteMemoryStore(db) as other:
        store = SqliteMemoryStore(db)
        await store.open()
        await _write_and_delete_under_a_reader(store, db)
        await store.aclose()
        assert _leaks(db) == []
        assert len(await other.search(MemorySearchQuery(limit=100))) == 20


async def test_with_no_further_call_the_background_retry_removes_the_bytes(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as other, SqliteMemoryStore(db) as store:
        await _write_and_delete_under_a_reader(store, db)
        for _ in range(200):  # up to 10 s; the retries back off to one a second
            if not _leaks(db):
                break
            await asyncio.sleep(0.05)
        assert _leaks(db) == []
        assert len(await other.search(MemorySearchQuery(limit=100))) == 20


async def test_after_the_retries_stop_a_later_write_removes_the_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The background retries give up after RETRY_FOR_SECONDS (60 s); shortened here.
    monkeypatch.setattr(wal, "RETRY_FOR_SECONDS", 0.2)
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as other, SqliteMemoryStore(db) as store:
        await _write_and_delete_under_a_reader_kept_past_the_retries(store, db)
        assert _leaks(db)  # no read since: only writes follow
        await store.write([MemoryWriteInput(scope={"u": "1"}, content="a later write")])
        assert _leaks(db) == []
        assert len(await other.search(MemorySearchQuery(limit=100))) == 21


async def _write_and_delete_under_a_reader_kept_past_the_retries(
    store: SqliteMemoryStore, db: Path
) -> None:
    await store.write([MemoryWriteInput(scope={"u": "1"}, content=f"note {i}") for i in range(20)])
    [secret] = await store.write([MemoryWriteInput(scope={"u": "1"}, content=SECRET)])
    with _reader_holding_a_snapshot(db):
        await store.delete(secret.id)
        # Every background retry is over, each blocked by the reader: wait for the retry
        # task to end (a fixed sleep could end while a slow machine's last retry still
        # waits on the reader, which would then succeed once the reader lets go).
        retries = store._wal._task
        assert retries is not None
        for _ in range(600):  # up to 30 s
            if retries.done():
                break
            await asyncio.sleep(0.05)
        assert retries.done()
    assert _leaks(db)
