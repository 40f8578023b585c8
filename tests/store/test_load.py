"""load_memory_store maps targets to backends and never falls back to memory."""

from pathlib import Path

import pytest

from recallstore import (
    ConfigurationError,
    InMemoryMemoryStore,
    MemorySearchQuery,
    MemoryWriteInput,
    StoreIncompatibleError,
    StoreUnavailableError,
)
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.schema import SCHEMA_VERSION
from recallstore.load import load_memory_store


def test_memory_target_is_the_in_memory_store() -> None:
    assert isinstance(load_memory_store("memory:"), InMemoryMemoryStore)


@pytest.mark.parametrize("form", ["plain", "pathlike", "sqlite-absolute"])
async def test_path_forms_open_the_same_sqlite_file(tmp_path: Path, form: str) -> None:
    db = tmp_path / "memory.db"
    targets: dict[str, str | Path] = {
        "plain": str(db),
        "pathlike": db,
        "sqlite-absolute": f"sqlite:///{db}",
    }
    store = load_memory_store(targets[form])
    assert isinstance(store, SqliteMemoryStore)
    assert store.path == db
    async with store:
        await store.write([MemoryWriteInput(scope={"user": "u1"}, content="likes tea")])
    assert db.is_file()
    async with SqliteMemoryStore(db) as reopened:
        hits = await reopened.search(MemorySearchQuery(query="tea"))
    assert [hit.record.content for hit in hits] == ["likes tea"]


async def test_sqlite_url_with_three_slashes_is_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    store = load_memory_store("sqlite:///data/my%20memory.db")
    assert isinstance(store, SqliteMemoryStore)
    assert store.path == tmp_path / "data" / "my memory.db"
    async with store:
        pass
    assert (tmp_path / "data" / "my memory.db").is_file()


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("redis://localhost/0", "unknown scheme"),
        ("mem:", "unknown scheme"),
        ("postgresql+asyncpg://localhost/db", "unknown scheme"),
        ("sqlite://host/path.db", "no host"),
        ("sqlite:///path.db?mode=ro", "options are not supported"),
        ("sqlite:///:memory:", "names no database file"),
        (":memory:", "ambiguous"),
        ("   ", "empty"),
    ],
)
def test_bad_targets_are_configuration_errors(target: str, words: str) -> None:
    with pytest.raises(ConfigurationError, match=words):
        load_memory_store(target)


@pytest.mark.parametrize("target", ["postgresql://app@db.internal/app", "postgres://db/app"])
def test_postgres_urls_load_the_postgres_backend(target: str) -> None:
    assert isinstance(load_memory_store(target), PostgresMemoryStore)


async def test_unopenable_target_raises_and_never_falls_back(tmp_path: Path) -> None:
    missing_dir = tmp_path / "no-such-dir" / "memory.db"
    store = load_memory_store(str(missing_dir))
    assert isinstance(store, SqliteMemoryStore)
    with pytest.raises(StoreUnavailableError, match="does not exist"):
        async with store:
            pytest.fail("the store must not open")
    assert not missing_dir.parent.exists()
    with pytest.raises(StoreUnavailableError, match="not open"):
        await store.search(MemorySearchQuery())


async def test_non_database_target_raises(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database, just notes\n")
    with pytest.raises(StoreUnavailableError, match="not a SQLite database"):
        async with load_memory_store(notes):
            pytest.fail("the store must not open")
    assert notes.read_text() == "not a database, just notes\n"


async def test_newer_schema_through_load_is_incompatible(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "future.db"
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreIncompatibleError):
        async with load_memory_store(f"sqlite:///{db}"):
            pytest.fail("the store must not open")
