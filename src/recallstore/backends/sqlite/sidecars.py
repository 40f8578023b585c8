"""Leaving a database file as we found it: no ``-wal`` / ``-shm`` of ours behind.

Two cases. A store opened read-only reads through the URI :func:`reading_uri` picks
for the file (why each of its three answers: ``sqlite.read_only``). And a refused
file: the read-only probe of an existing file (``schema.probe_version``) makes SQLite create
the ``-wal`` and ``-shm`` files of a WAL-mode database, and a read-only connection
cannot remove them when it closes. When the file is then refused (malformed, another
application's, too new), the user would find two files they never asked for beside it.

They are never deleted by hand: another process may have the database open, and
unlinking its live ``-shm`` or ``-wal`` would corrupt its view. Instead one read-write
connection is opened and closed: SQLite removes both only when that connection is the
last one on the file, and with nothing in the log the close writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

from recallstore.backends.sqlite.driver import SqliteDriver
from recallstore.errors import StoreUnavailableError

_SUFFIXES = ("-wal", "-shm")


def can_write(path: Path) -> bool:
    """True when this process may write ``path`` and create files beside it.

    ``os.access`` asks the kernel with the real ids: ``chmod``, ``chattr +i`` and a
    read-only mount all answer no (root only to the last two).
    """
    folder = path.parent
    return os.access(path, os.W_OK) and os.access(folder, os.W_OK | os.X_OK)


def refuse_unwritable(path: Path) -> None:
    """Raise :class:`StoreUnavailableError` saying why this process cannot write the
    database at ``path`` (before SQLite opens it, whose own word would be "attempt to
    write a readonly database", or a failed read-only probe).

    SQLite writes the file and keeps its write-ahead log beside it (``-wal`` and
    ``-shm``), so the folder must let it create those, unless both exist and are
    writable already.
    """
    target = str(path)
    folder = path.parent
    why = "(its permissions, or a read-only file system)"
    if not path.exists():
        if not os.access(folder, os.W_OK | os.X_OK):
            raise StoreUnavailableError(
                target,
                f"cannot create the database: the folder {str(folder)!r} is not "
                f"writable by this process {why}",
            )
        return
    if not os.access(path, os.W_OK):
        raise StoreUnavailableError(
            target,
            f"cannot write the database: the file is not writable by this process {why}; "
            "it can still be read (read_only=True, or the command line's list, search, "
            "show, export)",
        )
    sidecars_ready = all(os.access(sidecar, os.W_OK) for sidecar in _sidecars(path))
    if not sidecars_ready and not os.access(folder, os.W_OK | os.X_OK):
        raise StoreUnavailableError(
            target,
            f"cannot write the database: its folder {str(folder)!r} is not writable by this "
            f"process {why}, and SQLite keeps its write-ahead log ({path.name}-wal, "
            f"{path.name}-shm) beside the file",
        )


def reading_uri(path: Path) -> str:
    """The SQLite URI that reads ``path`` without writing it or leaving files beside it:
    ``mode=ro`` beside another connection's ``-wal``, else ``mode=rw`` when
    :func:`can_write`, else ``immutable=1`` (``sqlite.read_only`` says why)."""
    uri = path.resolve().as_uri()
    if path.with_name(path.name + "-wal").exists():
        return f"{uri}?mode=ro"
    if can_write(path):
        return f"{uri}?mode=rw"
    return f"{uri}?immutable=1"


def _sidecars(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in _SUFFIXES]


@asynccontextmanager
async def no_sidecars_left_on_refusal(path: Path, driver: SqliteDriver) -> AsyncIterator[None]:
    """Run the probe of ``path``; if it raises, sweep the sidecars it created."""
    absent = [sidecar for sidecar in _sidecars(path) if not sidecar.exists()]
    try:
        yield
    except BaseException:
        if absent and any(sidecar.exists() for sidecar in absent):
            await _sweep(path, driver)
        raise


async def _sweep(path: Path, driver: SqliteDriver) -> None:
    # Best effort: the refusal the caller raises matters more than a leftover file.
    with suppress(driver.error, OSError):
        async with driver.connect(path, isolation_level=None) as conn:
            with suppress(driver.error):
                async with conn.execute("PRAGMA user_version") as cursor:
                    await cursor.fetchone()
