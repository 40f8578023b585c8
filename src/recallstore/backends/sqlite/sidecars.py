"""Leaving a refused database file as we found it: no ``-wal`` / ``-shm`` of ours behind.

The read-only probe of an existing file (``schema.probe_version``) makes SQLite create
the ``-wal`` and ``-shm`` files of a WAL-mode database, and a read-only connection
cannot remove them when it closes. When the file is then refused (malformed, another
application's, too new), the user would find two files they never asked for beside it.

They are never deleted by hand: another process may have the database open, and
unlinking its live ``-shm`` or ``-wal`` would corrupt its view. Instead one read-write
connection is opened and closed: SQLite removes both only when that connection is the
last one on the file, and with nothing in the log the close writes nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

from recallstore.backends.sqlite.driver import SqliteDriver

_SUFFIXES = ("-wal", "-shm")


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
