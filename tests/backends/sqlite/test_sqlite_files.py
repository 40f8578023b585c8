"""What SqliteMemoryStore does to (and refuses to do to) the database file itself."""

import hashlib
import sqlite3
from pathlib import Path

import pytest

from recallstore import (
    MemorySearchQuery,
    MemoryWriteInput,
    StoreIncompatibleError,
    StoreUnavailableError,
)
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.schema import MIGRATIONS, SCHEMA_VERSION


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sidecars(db: Path) -> list[Path]:
    return [
        p for p in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")) if p.exists()
    ]


def run_sql(db: Path, *statements: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        rows: list[tuple[object, ...]] = []
        for statement in statements:
            rows = conn.execute(statement).fetchall()
        return rows
    finally:
        conn.close()


async def test_a_newer_schema_is_refused_naming_both_versions_and_left_unchanged(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        await store.write([MemoryWriteInput(scope={}, content="written by this version")])
    newer = SCHEMA_VERSION + 41
    run_sql(db, f"PRAGMA user_version = {newer}")
    before = digest(db)
    assert sidecars(db) == []
    with pytest.raises(StoreIncompatibleError) as caught:
        async with SqliteMemoryStore(db):
            pytest.fail("a newer database must not open")
    assert caught.value.found_version == newer
    assert caught.value.supported_version == SCHEMA_VERSION
    assert f"schema version {newer}" in str(caught.value)
    assert f"supported version {SCHEMA_VERSION}" in str(caught.value)
    assert digest(db) == before


async def test_a_newer_rollback_journal_database_is_left_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "from-the-future.db"
    run_sql(
        db,
        "CREATE TABLE memory_records (id TEXT)",
        f"PRAGMA user_version = {SCHEMA_VERSION + 1}",
    )
    before = digest(db)
    with pytest.raises(StoreIncompatibleError, match=str(SCHEMA_VERSION + 1)):
        await SqliteMemoryStore(db).open()
    assert digest(db) == before
    assert run_sql(db, "PRAGMA journal_mode") == [("delete",)]


@pytest.mark.parametrize(
    "content", [b"hello, this is a text file\n", b"\x00" * 4096, b"SQLite format 2\x00 nope"]
)
async def test_a_file_that_is_not_a_database_is_refused_and_untouched(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "memory.db"
    path.write_bytes(content)
    with pytest.raises(StoreUnavailableError, match="not a SQLite database"):
        await SqliteMemoryStore(path).open()
    assert path.read_bytes() == content
    assert sidecars(path) == []


async def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    run_sql(db, "CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    before = digest(db)
    with pytest.raises(StoreUnavailableError, match="needs its own file"):
        await SqliteMemoryStore(db).open()
    assert digest(db) == before


@pytest.mark.parametrize("where", ["missing-directory", "a-directory"])
async def test_unusable_locations_are_refused_with_the_reason(tmp_path: Path, where: str) -> None:
    path = tmp_path / "missing" / "memory.db" if where == "missing-directory" else tmp_path
    with pytest.raises(StoreUnavailableError) as caught:
        await SqliteMemoryStore(path).open()
    assert caught.value.target == str(path)
    assert caught.value.reason in {
        f"the directory {str(path.parent)!r} does not exist",
        "the path is a directory, not a database file",
    }


async def test_migrations_are_recorded_once_and_the_file_is_configured(tmp_path: Path) -> None:
    versions = [version for version, _ in MIGRATIONS]
    # Increasing from 1; 11 is left to a change in flight (issue 38's step is 12):
    # when both are in, this is list(range(1, len(versions) + 1)) again.
    assert versions[0] == 1
    assert versions == sorted(set(versions))
    assert set(range(1, versions[-1] + 1)) - set(versions) <= {11}
    db = tmp_path / "memory.db"
    for _ in range(2):
        async with SqliteMemoryStore(db):
            pass
    applied = run_sql(db, "SELECT version, applied_at FROM schema_migrations ORDER BY version")
    assert [version for version, _ in applied] == versions
    assert all(isinstance(at, str) and at.endswith("Z") for _, at in applied)
    assert run_sql(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert run_sql(db, "PRAGMA journal_mode") == [("wal",)]


async def test_a_database_from_an_older_version_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    run_sql(db, "PRAGMA user_version = 0")  # an empty, version-0 database file
    async with SqliteMemoryStore(db) as store:
        await store.write([MemoryWriteInput(scope={}, content="after migration")])
        assert len(await store.search(MemorySearchQuery(query="migration"))) == 1
    assert run_sql(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


DISTINCTIVE = "Quixotrombulate zephyrwhisk glorptastic 4417-secret-kumquat"


async def test_deleted_content_leaves_the_file(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        keep = [
            MemoryWriteInput(scope={"user": f"u{i}"}, content=f"ordinary note number {i} about tea")
            for i in range(200)
        ]
        await store.write(keep)
        secret = (
            await store.write(
                [MemoryWriteInput(scope={"user": "u1"}, content=DISTINCTIVE, tags=["secret"])]
            )
        )[0]
        # Later single writes push the secret's FTS5 segment up the merge levels, where a
        # plain delete would only add a tombstone and leave its terms in the file.
        for i in range(40):
            await store.write([MemoryWriteInput(scope={}, content=f"later note {i} about tea")])
        run_sql(db, "PRAGMA wal_checkpoint(TRUNCATE)")
        assert DISTINCTIVE.encode() in db.read_bytes()  # the probe can see it before delete

        await store.delete(secret.id)
        assert await store.get(secret.id) is None
        assert await store.search(MemorySearchQuery(query=DISTINCTIVE)) == []
        busy, _, _ = run_sql(db, "PRAGMA wal_checkpoint(TRUNCATE)")[0]
        assert busy == 0
        files = [db, *sidecars(db)]
        blob = b"".join(path.read_bytes() for path in files)
        for needle in [DISTINCTIVE, *DISTINCTIVE.split(), "quixotrombul", "zephyrwhisk", "kumquat"]:
            assert needle.encode() not in blob, needle
            assert needle.lower().encode() not in blob, needle
        assert b"ordinary note number 7 about tea" in blob
        assert len(await store.search(MemorySearchQuery(query="tea", limit=1000))) == 240
    assert DISTINCTIVE.lower().encode() not in db.read_bytes()
