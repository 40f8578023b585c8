"""Deleted words leave the SQLite file and its -wal, with each SQLite driver available.

Real files, real drivers: the standard library's sqlite3 (FTS5 merged after a delete)
and, when the 'sqlite' extra is installed, a SQLite 3.42+ (FTS5 secure-delete). The
test writes records holding words found nowhere else, deletes and forgets them, closes
the store and reads the bytes of every file SQLite left.
"""

from __future__ import annotations

import importlib.util
import random
import string
from pathlib import Path

import pytest

from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.driver import DRIVER_ENV, choose_sqlite
from recallstore.errors import ConfigurationError, MissingDependencyError, StoreUnavailableError

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


def _word(rng: random.Random) -> str:
    # Letters then a digit: one FTS5 token that the Porter stemmer leaves as it is.
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(10)) + "7"


def _bytes_of(db: Path) -> bytes:
    """Every file SQLite keeps for ``db``: the database, its -wal and -shm."""
    return b"".join(path.read_bytes() for path in sorted(db.parent.glob(db.name + "*")))


@pytest.mark.parametrize("driver", DRIVERS)
async def test_deleted_and_forgotten_words_leave_the_db_and_wal_bytes(
    tmp_path: Path, driver: str
) -> None:
    rng = random.Random(5)
    filler = [_word(rng)[:-1] for _ in range(400)]
    secrets = [_word(rng) for _ in range(24)]
    kept = _word(rng)
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db, sqlite_driver=driver) as store:
        assert store.sqlite_driver == driver
        # Enough records for an index of many pages, so the secrets share pages with others.
        for _ in range(4):
            await store.write(
                [
                    MemoryWriteInput(
                        scope={"user": f"u{rng.randrange(30)}"},
                        content=" ".join(rng.choices(filler, k=12)),
                    )
                    for _ in range(500)
                ]
            )
        victim = {"tenant": "acme", "user": "victim"}
        await store.write(
            [MemoryWriteInput(scope=victim, content=f"{word} was said") for word in secrets[:16]]
        )
        single = await store.write(
            [
                MemoryWriteInput(scope={"user": "u1"}, content=f"{word} {kept}")
                for word in secrets[16:]
            ]
        )
        await store.write([MemoryWriteInput(scope={"user": "u1"}, content=f"still here {kept}")])
        assert _bytes_of(db).count(secrets[0].encode()) >= 1
        for record in single:
            await store.delete(record.id)
        assert await store.forget({"user": "victim"}) == 16
    blob = _bytes_of(db)
    assert kept.encode() in blob  # what was not deleted is there: the search is real
    assert [word for word in secrets if word.encode() in blob] == []


@pytest.mark.skipif(FAST.name == "stdlib", reason="no SQLite 3.42+ driver (the 'sqlite' extra)")
async def test_a_file_that_used_secure_delete_is_refused_by_an_older_sqlite_unchanged(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db, sqlite_driver=FAST.name) as store:
        [record] = await store.write([MemoryWriteInput(scope={"u": "1"}, content="gone soon")])
        await store.delete(record.id)
    content = db.read_bytes()
    assert not db.with_name(db.name + "-wal").exists()  # the store's close emptied it
    stdlib = choose_sqlite("stdlib")
    if stdlib.secure_delete:
        pytest.skip(f"the standard library's SQLite {stdlib.version_text} reads it")
    with pytest.raises(StoreUnavailableError) as caught:
        async with SqliteMemoryStore(db, sqlite_driver="stdlib"):
            pass
    assert "pip install 'recallstore[sqlite]'" in str(caught.value)
    assert "secure-delete" in str(caught.value)
    assert db.read_bytes() == content
    # A read-only probe of a WAL file may leave an empty -wal beside it, nothing more.
    wal = db.with_name(db.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    # The driver that wrote it still opens it.
    async with SqliteMemoryStore(db, sqlite_driver=FAST.name) as store:
        await store.write([MemoryWriteInput(scope={"u": "1"}, content="back again")])


@pytest.mark.parametrize("driver", DRIVERS)
async def test_database_errors_of_the_driver_in_use_become_store_unavailable(
    tmp_path: Path, driver: str
) -> None:
    db = tmp_path / "memory.db"
    # A SQLite header, then garbage: the driver's own error class must be translated.
    db.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 16)
    with pytest.raises(StoreUnavailableError):
        async with SqliteMemoryStore(db, sqlite_driver=driver):
            pass


def test_the_driver_is_chosen_by_argument_then_environment_then_auto(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DRIVER_ENV, "stdlib")
    assert choose_sqlite().name == "stdlib"
    assert choose_sqlite("auto").name == FAST.name
    monkeypatch.delenv(DRIVER_ENV)
    assert choose_sqlite().name == FAST.name
    if FAST.name != "stdlib":
        assert FAST.secure_delete
    monkeypatch.setenv(DRIVER_ENV, "oracle")
    with pytest.raises(ConfigurationError, match=DRIVER_ENV):
        choose_sqlite()
    with pytest.raises(ConfigurationError, match="sqlite_driver"):
        SqliteMemoryStore(Path("x.db"), sqlite_driver="mysql")


@pytest.mark.parametrize("name", ["pysqlite3", "sqlean"])
def test_naming_a_driver_that_is_not_installed_gives_the_install_command(name: str) -> None:
    module = {"pysqlite3": "pysqlite3", "sqlean": "sqlean"}[name]
    if importlib.util.find_spec(module) is not None:
        assert choose_sqlite(name).name == name
        return
    with pytest.raises(MissingDependencyError) as caught:
        choose_sqlite(name)
    assert "pip install 'recallstore[sqlite]'" in str(caught.value)
