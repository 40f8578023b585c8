"""How the SQLite backend forgets: ``delete``, ``forget(scope)``, and the words in the index.

A deleted record's row goes at once (``PRAGMA secure_delete`` zeroes the freed
space), but FTS5 keeps an index of words, and how its words leave depends on the
SQLite in use (see ``sqlite.driver`` and docs/deletion.md):

* **SQLite 3.42+** (the ``sqlite`` extra): the index runs with FTS5's
  ``secure-delete`` option, so a delete removes the record's entries from the index
  pages it touches, in the same transaction. Nothing else is needed; the cost does
  not grow with the store.
* **Older SQLite** (the standard library's 3.40 here): a delete only adds a
  tombstone, and the words stay in older index segments until those are merged; so
  every deleting transaction ends with ``optimize``, which merges the whole index
  into one segment. Its cost is proportional to the index — a ``forget`` pays it once
  for all its records, not once per record.

Once a file's index has used ``secure-delete``, SQLite before 3.42 cannot read it
(FTS5 format version 5); :func:`check_index_format` refuses to open such a file with
an older SQLite, before anything is written to it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Final

from recallstore.backends._forget_traces import provenance_values
from recallstore.backends.sqlite.driver import INSTALL_COMMAND, SqliteDriver
from recallstore.errors import StoreUnavailableError

__all__ = [
    "OLD_INDEX_FORMAT",
    "check_index_format",
    "delete_now",
    "forget_now",
    "use_secure_delete",
]

OLD_INDEX_FORMAT: Final = 4
"""The FTS5 index format every SQLite with FTS5 reads; ``secure-delete`` writes 5."""
_MERGE: Final = "INSERT INTO memory_fts (memory_fts) VALUES ('optimize')"
# Each scope pair narrows the records; the first comes from the (key, value) index.
_PAIR: Final = "SELECT record_seq FROM memory_scope WHERE key = ? AND value = ?"


def check_index_format(target: str, index_format: int, driver: SqliteDriver) -> None:
    """Refuse a file whose FTS5 index this SQLite cannot read (before any write to it)."""
    if index_format > OLD_INDEX_FORMAT and not driver.secure_delete:
        raise StoreUnavailableError(
            target,
            f"its search index was written with FTS5 secure-delete (SQLite 3.42 or newer), "
            f"which the SQLite in use ({driver.name}, {driver.version_text}) cannot read; "
            f"install a current SQLite with: {INSTALL_COMMAND} (the file was not changed)",
        )


def use_secure_delete(db: sqlite3.Connection) -> None:
    """Turn FTS5 ``secure-delete`` on for the index, once per file (SQLite 3.42+ only).

    The option is stored in the index's config table; the format only changes to 5
    at the first delete made with it.
    """
    row = db.execute("SELECT v FROM memory_fts_config WHERE k = 'secure-delete'").fetchone()
    if row is None or not int(row[0]):
        db.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('secure-delete', 1)").close()


def delete_now(db: sqlite3.Connection, id: str, merge: bool) -> bool:
    """Delete one record (its index entries go by trigger); False when it was absent.

    ``merge``: end with ``optimize`` (a SQLite without ``secure-delete``).
    """
    cursor = db.execute("DELETE FROM memory_records WHERE id = ?", (id,))
    deleted = cursor.rowcount > 0
    cursor.close()
    if deleted and merge:
        db.execute(_MERGE).close()
    return deleted


def forget_now(
    db: sqlite3.Connection, scope: Mapping[str, str], merge: bool
) -> list[tuple[str, str, frozenset[str]]]:
    """Delete every record whose scope contains ``scope`` (one pair at least); returns
    their ``(id, kind, provenance ids)`` in the order they were stored. ``merge`` as in
    :func:`delete_now`, once."""
    pairs = list(scope.items())
    assert pairs, "forget_now needs a scope pair"
    narrowed = " INTERSECT ".join([_PAIR] * len(pairs))
    params = [part for pair in pairs for part in pair]
    cursor = db.execute(
        f"SELECT seq, id, kind, provenance, supports FROM memory_records "
        f"WHERE seq IN ({narrowed}) ORDER BY seq",
        params,
    )
    rows = cursor.fetchall()
    cursor.close()
    if rows:
        # One statement, not one per record: FTS5 writes out its pending changes at
        # every statement's savepoint, and with secure-delete each write-out searched
        # every segment of the index again.
        db.execute(f"DELETE FROM memory_records WHERE seq IN ({narrowed})", params).close()
    if rows and merge:
        db.execute(_MERGE).close()
    return [
        (
            str(row[1]),
            str(row[2]),
            provenance_values(
                None if row[3] is None else json.loads(row[3]), json.loads(row[4] or "[]")
            ),
        )
        for row in rows
    ]
