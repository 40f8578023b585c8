"""Opening a database file only to look at it: nothing written, nothing left behind.

A store opened with ``read_only=True`` (the command line's ``list``, ``search``,
``show``, ``export`` and ``events tail``; the lens on a file it cannot write) must leave
the file byte-identical and must work on a file it cannot write. SQLite offers three
ways in, and which one fits depends on what this process may do to the file:

* **a ``-wal`` file is there** (a writer has the file open, or left its log behind):
  ``mode=ro``, which reads the log through the existing ``-shm`` and removes neither
  (they are the writer's).
* **no ``-wal``, and the file and its folder are writable**: an ordinary read-write
  connection (``mode=rw``, never creating) with ``PRAGMA query_only``. In WAL mode a
  reader needs the ``-shm`` index, and only a read-write connection removes the
  ``-wal`` and ``-shm`` it made when it is the last to close; a ``mode=ro``
  connection would leave both behind.
* **no ``-wal``, and not writable**: ``immutable=1``. A read-only connection cannot
  create the ``-shm`` it needs in a folder it cannot write, so SQLite is told the file
  does not change while it is open: no locks, no log. Nobody can be writing it without
  a ``-wal`` beside it, and a writer that starts meanwhile is not seen until the next
  opening (a command's run, or a lens restart).

Nothing is migrated: a file of an older schema is refused with the reason (a writer
migrates it when it opens it), and every write call raises
:class:`~recallstore.errors.StoreUnavailableError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import aiosqlite

from recallstore.backends.sqlite import schema, vectors
from recallstore.backends.sqlite.delete import check_index_format
from recallstore.backends.sqlite.driver import SqliteDriver
from recallstore.backends.sqlite.rows import run
from recallstore.backends.sqlite.sidecars import reading_uri
from recallstore.embedding import Embedder
from recallstore.errors import EmbedderMismatchError, StoreUnavailableError

__all__ = ["READ_ONLY_REASON", "open_reader"]

READ_ONLY_REASON: Final = (
    "the store was opened read-only (to look at it), so it writes nothing; "
    "open it without read_only to change it"
)
"""The reason a write to a read-only store is refused with."""


async def open_reader(
    path: Path, driver: SqliteDriver, embedder: Embedder | None, busy_seconds: float
) -> aiosqlite.Connection:
    """A connection that reads ``path`` and can write nothing; refuses, as an opening
    for writing would, a file that is missing, not ours, too new or too old."""
    target = str(path)
    if schema.check_location(path) is None:
        raise StoreUnavailableError(target, "there is no memory database in the file to read")
    uri = reading_uri(path)
    index_format = await schema.probe_version(target, uri, driver)
    check_index_format(target, index_format, driver)
    try:
        conn = await driver.connect(uri, uri=True, isolation_level=None, timeout=busy_seconds)
    except driver.error as exc:
        raise StoreUnavailableError(target, f"cannot open: {exc}") from exc
    try:
        found = await schema.read_user_version(conn)
        if found < schema.SCHEMA_VERSION:
            raise StoreUnavailableError(
                target,
                f"its schema (version {found}) predates this recallstore's "
                f"({schema.SCHEMA_VERSION}) and a read-only opening does not migrate it; "
                "the next opening for writing (an agent's store, recallstore serve on a "
                "writable file) migrates it",
            )
        await run(conn, f"PRAGMA busy_timeout = {int(busy_seconds * 1000)}")
        await run(conn, "PRAGMA query_only = ON")
        stored = await vectors.stored_embedder(conn) if embedder is not None else None
        if embedder is not None and stored is not None:
            given = (embedder.name, embedder.dimension)
            if stored[:2] != given:
                raise EmbedderMismatchError(target, stored[:2], given)
    except BaseException as exc:
        await conn.close()
        if isinstance(exc, driver.error):
            raise StoreUnavailableError(target, f"cannot open: {exc}") from exc
        raise
    return conn
