"""The SQLite backend's schema: applying the migration ladder and the checks made before opening.

The schema version lives in ``PRAGMA user_version``; the steps are in
``sqlite.migrations`` (append-only). Each applied version is also recorded in
``schema_migrations`` with its time.

Nothing here writes to a file before its version has been read: a file from a newer
release must come out of a failed open byte-for-byte unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final
from urllib.parse import unquote

import aiosqlite

from recallstore.backends.sqlite.driver import SqliteDriver
from recallstore.backends.sqlite.migrations import (
    DEFAULT_TOKENIZER,
    MIGRATIONS,
    SCHEMA_VERSION,
    TOKENIZERS,
)
from recallstore.errors import ConfigurationError, StoreIncompatibleError, StoreUnavailableError
from recallstore.records import format_timestamp
from recallstore.store import store_id_from, utc_now

__all__ = [
    "DEFAULT_TOKENIZER",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TOKENIZERS",
    "check_location",
    "migrate",
    "probe_version",
    "read_user_version",
    "url_path",
]

_SQLITE_MAGIC = b"SQLite format 3\x00"
_SQLITE_PREFIX: Final = "sqlite://"


_REQUIRED_TABLES = frozenset({"schema_migrations", "memory_records", "memory_fts"})


def check_location(path: Path) -> str | None:
    """Refuse, before SQLite touches anything, a path that cannot hold our database.

    Returns a read-only URI for :func:`probe_version` when the file already has content.
    """
    target = str(path)
    if not path.parent.is_dir():
        raise StoreUnavailableError(target, f"the directory {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise StoreUnavailableError(target, "the path is a directory, not a database file")
    if not path.exists():
        return None
    try:
        with path.open("rb") as handle:
            header = handle.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise StoreUnavailableError(target, f"cannot read the file: {exc.strerror}") from exc
    if header and header != _SQLITE_MAGIC:
        raise StoreUnavailableError(target, "the file is not a SQLite database")
    return f"{path.resolve().as_uri()}?mode=ro" if header else None


async def read_store_id(conn: aiosqlite.Connection) -> str | None:
    """The store id of this database (``store_id_from``): from the instant its schema
    was first created, the oldest ``schema_migrations`` row; None without one."""
    async with conn.execute(
        "SELECT applied_at FROM schema_migrations ORDER BY version LIMIT 1"
    ) as cursor:
        row = await cursor.fetchone()
    return None if row is None else store_id_from(f"sqlite:{row[0]}")


async def read_user_version(conn: aiosqlite.Connection) -> int:
    """``PRAGMA user_version`` of the open database."""
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row is not None else 0


async def _run(conn: aiosqlite.Connection, sql: str, params: tuple[object, ...] = ()) -> None:
    async with conn.execute(sql, params):
        pass


async def _table_names(conn: aiosqlite.Connection) -> set[str]:
    async with conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'") as cursor:
        return {str(row[0]) for row in await cursor.fetchall()}


def _check_ours(target: str, version: int, tables: set[str]) -> None:
    if version > SCHEMA_VERSION:
        raise StoreIncompatibleError(target, version, SCHEMA_VERSION)
    if version == 0 and tables:
        raise StoreUnavailableError(
            target,
            "the database holds another application's tables; recallstore needs its own file",
        )
    if version > 0 and not tables >= _REQUIRED_TABLES:
        raise StoreUnavailableError(
            target, f"the database (user_version {version}) is not a recallstore database"
        )


async def probe_version(target: str, uri: str, driver: SqliteDriver) -> int:
    """Read an existing file's version over a read-only connection; refuse what we can't use.

    The version and the table list are read in one transaction (one snapshot), so a
    file another process is creating and migrating at that moment is never mistaken
    for another application's. A read-only connection cannot write the header or
    checkpoint on close, so a refused file is left exactly as it was. Returns the
    format of the FTS5 index (0 when there is none yet), for ``check_index_format``.
    """
    try:
        async with driver.connect(uri, uri=True, isolation_level=None) as conn:
            # One read transaction, so both answers come from one snapshot: read in two
            # autocommit statements, another process's migration could land between
            # them (version 0 with our tables) and the file would be refused.
            await _run(conn, "BEGIN")
            version = await read_user_version(conn)
            tables = await _table_names(conn)
            index_format = 0
            if "memory_fts_config" in tables:
                async with conn.execute(
                    "SELECT v FROM memory_fts_config WHERE k = 'version'"
                ) as cursor:
                    row = await cursor.fetchone()
                index_format = int(row[0]) if row is not None else 0
            await _run(conn, "COMMIT")
    except driver.error as exc:
        raise StoreUnavailableError(target, f"cannot read the database: {exc}") from exc
    _check_ours(target, version, tables)
    return index_format


async def _index_tokenizer(conn: aiosqlite.Connection) -> str | None:
    """The tokenizer definition the file's index was created with (a value of
    :data:`TOKENIZERS`), or None before it has one: a later step that tokenises text
    must do it as the index does, whatever tokenizer the store opening it asks for."""
    async with conn.execute(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'memory_fts'"
    ) as cursor:
        row = await cursor.fetchone()
    if row is None:
        return None
    for definition in TOKENIZERS.values():
        if f"'{definition}'" in str(row[0]):  # quoted: one ends with the other
            return definition
    return None


async def migrate(conn: aiosqlite.Connection, target: str, tokenizer: str) -> int:
    """Bring the database up to SCHEMA_VERSION in one transaction; return the old version."""
    current = await read_user_version(conn)
    if current == SCHEMA_VERSION:
        return current
    try:
        await _run(conn, "BEGIN IMMEDIATE")
        # Re-read under the write lock: another process may have migrated meanwhile.
        current = await read_user_version(conn)
        _check_ours(target, current, await _table_names(conn))
        tokenize = await _index_tokenizer(conn) or TOKENIZERS[tokenizer]
        for version, statements in MIGRATIONS:
            if version <= current:
                continue
            for statement in statements:
                await _run(conn, statement.format(tokenize=tokenize))
            await _run(
                conn,
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                (version, format_timestamp(utc_now())),
            )
        # PRAGMA takes no parameters; SCHEMA_VERSION is an int constant.
        await _run(conn, f"PRAGMA user_version = {int(SCHEMA_VERSION)}")
        await _run(conn, "COMMIT")
    except BaseException:
        # On aiosqlite's thread, behind any statement a cancellation left running there.
        await conn.rollback()
        raise
    return current


def url_path(url: str) -> Path:
    """The file path of ``sqlite:///relative`` or ``sqlite:////absolute``."""
    if not url.lower().startswith(_SQLITE_PREFIX):
        raise ConfigurationError(
            f"memory store target {url!r}: a SQLite URL is 'sqlite:///relative/path.db' "
            "or 'sqlite:////absolute/path.db'"
        )
    host, slash, path = url[len(_SQLITE_PREFIX) :].partition("/")
    if host or not slash:
        raise ConfigurationError(
            f"memory store target {url!r}: a SQLite URL has no host; "
            "use 'sqlite:///relative/path.db' or 'sqlite:////absolute/path.db'"
        )
    if "?" in path or "#" in path:
        raise ConfigurationError(
            f"memory store target {url!r}: SQLite URL options are not supported"
        )
    path = unquote(path)
    if not path or path == ":memory:":
        raise ConfigurationError(
            f"memory store target {url!r} names no database file; "
            "for a non-durable store use 'memory:'"
        )
    return Path(path)
