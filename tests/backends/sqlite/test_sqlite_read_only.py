"""``SqliteMemoryStore(read_only=True)`` and ``JournalSettings(reads=False)``: looking at a
store writes nothing; an agent's own searches stay journaled."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import sqlite3
import subprocess
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import cast

import pytest

from recallstore import MemorySearchQuery, MemoryWriteInput, load_memory_store
from recallstore.backends.journal import JournalEntry, JournalSettings
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.schema import SCHEMA_VERSION
from recallstore.backends.sqlite.sidecars import reading_uri
from recallstore.errors import StoreUnavailableError

ALICE = {"user": "alice"}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def journal_types(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [str(row[0]) for row in conn.execute("SELECT type FROM memory_journal ORDER BY seq")]
    finally:
        conn.close()


def names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


async def seeded(path: Path) -> str:
    async with SqliteMemoryStore(path) as store:
        [record] = await store.write([MemoryWriteInput(scope=ALICE, content="Alice likes tea")])
    return record.id


async def test_a_read_only_store_reads_and_refuses_every_write(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    record_id = await seeded(db)
    before = digest(db)
    async with SqliteMemoryStore(db, read_only=True) as store:
        hits = await store.search(MemorySearchQuery(query="tea", scope=ALICE))
        assert [hit.record.id for hit in hits] == [record_id]
        assert (await store.get(record_id)) is not None
        assert [entry.type for entry in await store.read_journal()] == ["agent.memory.write"]
        await store.flush_journal()  # nothing buffered, nothing written
        refusals = [
            store.write([MemoryWriteInput(scope=ALICE, content="Alice likes coffee")]),
            store.invalidate(record_id, "changed her mind"),
            store.delete(record_id),
        ]
        for call in refusals:
            with pytest.raises(StoreUnavailableError, match="read-only"):
                await call
    assert digest(db) == before
    assert names(tmp_path) == ["memory.db"]


async def test_load_memory_store_read_only_journals_no_searches(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    await seeded(db)
    async with load_memory_store(db, read_only=True) as store:
        await store.search(MemorySearchQuery(query="tea", scope=ALICE))
    assert journal_types(db) == ["agent.memory.write"]


async def test_an_agents_searches_stay_journaled_and_quiet_reads_keep_writes(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as agent:
        await agent.write([MemoryWriteInput(scope=ALICE, content="Alice likes tea")])
        await agent.search(MemorySearchQuery(query="tea", scope=ALICE))
    assert journal_types(db) == ["agent.memory.write", "agent.memory.search"]
    async with SqliteMemoryStore(db, journal=JournalSettings(reads=False)) as lens:
        await lens.search(MemorySearchQuery(query="tea", scope=ALICE))
        [record] = await lens.write([MemoryWriteInput(scope=ALICE, content="Alice likes jam")])
        await lens.invalidate(record.id, "a test")
    assert (
        journal_types(db)
        == ["agent.memory.write", "agent.memory.search"] + ["agent.memory.write"] * 2
    )


async def test_a_read_only_store_refuses_a_file_it_would_have_to_migrate(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    await seeded(db)
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.commit()
    conn.close()
    before = digest(db)
    with pytest.raises(StoreUnavailableError, match="does not migrate"):
        async with SqliteMemoryStore(db, read_only=True):
            pass
    assert digest(db) == before


async def test_a_read_only_store_needs_a_database(tmp_path: Path) -> None:
    for db in (tmp_path / "missing.db", tmp_path / "empty.db"):
        if db.name == "empty.db":
            db.write_bytes(b"")
        with pytest.raises(StoreUnavailableError, match="no memory database"):
            async with SqliteMemoryStore(db, read_only=True):
                pass
    assert not (tmp_path / "missing.db").exists()
    assert (tmp_path / "empty.db").read_bytes() == b""


def test_the_reading_uri_follows_what_the_process_may_do(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    asyncio.run(seeded(db))
    assert reading_uri(db).endswith("?mode=rw")
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(db)], check=False).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        assert reading_uri(db).endswith("?immutable=1")
        (tmp_path / "memory.db-wal").touch()  # a writer's log beside it
        assert reading_uri(db).endswith("?mode=ro")
    finally:
        subprocess.run([chattr, "-i", str(db)], check=True)


async def test_a_read_only_tailer_sees_a_writer_commit(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    await seeded(db)
    async with (
        SqliteMemoryStore(db) as writer,
        SqliteMemoryStore(db, read_only=True) as reader,
    ):
        follow = cast(AsyncGenerator[JournalEntry, None], reader.follow_journal(after=1))
        waiting = asyncio.ensure_future(anext(follow))
        await writer.write([MemoryWriteInput(scope=ALICE, content="Alice likes jam")])
        entry = await asyncio.wait_for(waiting, 5)
        assert entry.type == "agent.memory.write"
        await follow.aclose()
