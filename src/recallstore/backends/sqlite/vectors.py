"""The SQLite backend's vectors (hybrid search): schema, writes, the cache searches read.

Each record's unit vector is a float32 BLOB in ``memory_vectors`` (schema version 6),
deleted with its record (``ON DELETE CASCADE``); ``memory_embedder`` holds the one
embedder's name and dimension the vectors were made with, so a store is never searched
with vectors of two models.

At query time the vectors are not read from the file: a per-store :class:`VectorCache`
holds every vector in one :class:`~recallstore.backends._vectors.VectorRows` (3 KB a
record at 768 dimensions), kept current incrementally (each vector row is read once:
``vseq`` only grows). Finding the records nearest a query (``sqlite.nearest``) then
costs what the scope costs, as keyword search does:

* within a scope of at most :data:`SCAN_SCOPE` records, every row of the scope is
  compared, from a contiguous copy of the scope's rows kept while the scope's listing
  holds (``sqlite.scope_vectors``); the best are then checked against the other
  filters by primary key, best first, widening until enough pass;
* otherwise (unscoped, or a broad scope) the closest rows of the whole cache (exact
  up to ``EXACT_ROWS``, else the best of a sign-bit shortlist) are checked against the
  filters by primary key, best first, widening until enough pass.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import aiosqlite

from recallstore.backends._vectors import Matrix, VectorRows, from_blobs, numpy, to_blob
from recallstore.backends.sqlite.nearest import nearest_now
from recallstore.backends.sqlite.rows import (
    RECORD_COLUMNS,
    execute_many,
    fetchone,
    on_thread,
    record_from_row,
)
from recallstore.backends.sqlite.scope_vectors import SCAN_SCOPE, ScopeCopies
from recallstore.embedding import Embedder
from recallstore.errors import EmbedderMismatchError, EmbedderSwitchedError
from recallstore.records import MemoryRecord, MemorySearchQuery, format_timestamp
from recallstore.store import utc_now

if TYPE_CHECKING:
    from recallstore.backends.sqlite.commit import GroupCommit

__all__ = [
    "MIGRATION",
    "SCAN_SCOPE",
    "SqliteVectorPrimitives",
    "VectorCache",
    "all_rows",
    "check_embedder_now",
    "record_embedder",
    "replace_now",
    "store_vectors_now",
    "stored_embedder",
    "vector_statements",
]

MIGRATION: Final[tuple[str, ...]] = (
    # vseq only grows (AUTOINCREMENT), so a cache reads each vector row once even when
    # a deleted record's seq is reused.
    """CREATE TABLE memory_vectors (
        vseq INTEGER PRIMARY KEY AUTOINCREMENT,
        record_seq INTEGER NOT NULL UNIQUE
            REFERENCES memory_records (seq) ON DELETE CASCADE,
        vector BLOB NOT NULL
    )""",
    """CREATE TABLE memory_embedder (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        name TEXT NOT NULL,
        dimension INTEGER NOT NULL,
        generation INTEGER NOT NULL,
        recorded_at TEXT NOT NULL
    )""",
)
"""Schema version 6."""

_INSERT: Final = (
    "INSERT OR REPLACE INTO memory_vectors (record_seq, vector) "
    "SELECT seq, ? FROM memory_records WHERE id = ?"
)


def vector_statements(
    records: Sequence[MemoryRecord], vectors: Sequence[Matrix]
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The statements (for ``_sqlite_rows.execute_many``) storing ``vectors`` beside
    ``records``; run after the records' own inserts, in the same transaction."""
    rows = [(to_blob(vector), record.id) for record, vector in zip(records, vectors, strict=True)]
    return [(_INSERT, rows)]


async def stored_embedder(conn: aiosqlite.Connection) -> tuple[str, int, int] | None:
    """(name, dimension, generation) of the embedder the file records, or None."""
    row = await fetchone(conn, "SELECT name, dimension, generation FROM memory_embedder")
    return None if row is None else (str(row[0]), int(row[1]), int(row[2]))


async def record_embedder(conn: aiosqlite.Connection, target: str, embedder: Embedder) -> None:
    """Check ``embedder`` against the one the file records, recording it when there is
    none; :class:`EmbedderMismatchError` (nothing written) when they differ."""
    given = (embedder.name, embedder.dimension)
    stored = await stored_embedder(conn)
    if stored is not None:
        if stored[:2] != given:
            raise EmbedderMismatchError(target, stored[:2], given)
        return
    async with conn.execute(
        "INSERT OR IGNORE INTO memory_embedder VALUES (1, ?, ?, 1, ?)",
        (*given, format_timestamp(utc_now())),
    ):
        pass
    # Another opener may have recorded a different one at the same moment.
    stored = await stored_embedder(conn)
    if stored is not None and stored[:2] != given:
        raise EmbedderMismatchError(target, stored[:2], given)


def check_embedder_now(db: sqlite3.Connection, target: str, given: tuple[str, int]) -> None:
    """:class:`EmbedderSwitchedError` unless the file still records the embedder
    ``given`` (name, dimension); in a write call, so no vector of another model lands
    (another process may have run ``reembed`` since this store opened)."""
    _check_stored(db.execute(_STORED).fetchone(), target, given)


_STORED: Final = "SELECT name, dimension, generation FROM memory_embedder"


def _check_stored(row: Any, target: str, given: tuple[str, int]) -> int | None:
    """The generation of the stored embedder ``row``, after checking it is ``given``."""
    if row is None:
        return None
    stored = (str(row[0]), int(row[1]))
    if stored != given:
        raise EmbedderSwitchedError(target, stored, given)
    return int(row[2])


def store_vectors_now(
    db: sqlite3.Connection,
    expected: tuple[str, tuple[str, int]],
    records: Sequence[MemoryRecord],
    vectors: Sequence[Matrix],
) -> None:
    """Store ``vectors`` beside ``records`` (see :func:`vector_statements`) once
    :func:`check_embedder_now` found the file's embedder still ``expected`` (target,
    (name, dimension)); in the write call, on the connection's thread."""
    check_embedder_now(db, *expected)
    execute_many(db, vector_statements(records, vectors))


def all_rows(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every record's row (for ``reembed``), on the connection's thread."""
    return [tuple(row) for row in db.execute(f"SELECT {RECORD_COLUMNS} FROM memory_records AS r")]


def replace_now(db: sqlite3.Connection, name: str, dimension: int, made: dict[str, Matrix]) -> None:
    """Every vector replaced by ``made`` (by record id) and the embedder recorded with
    a new generation (so every cache reloads); on the connection's thread, in the
    write call's savepoint."""
    db.execute("DELETE FROM memory_vectors").close()
    db.executemany(_INSERT, [(to_blob(vector), key) for key, vector in made.items()]).close()
    row = db.execute("SELECT max(generation) FROM memory_embedder").fetchone()
    generation = int(row[0] or 0) + 1
    db.execute(
        "INSERT OR REPLACE INTO memory_embedder VALUES (1, ?, ?, ?, ?)",
        (name, dimension, generation, format_timestamp(utc_now())),
    ).close()


class VectorCache:
    """Every vector of the file in one :class:`VectorRows`, for searches too broad to
    read per query.

    Refreshed like ``FtsStatistics``: only when ``PRAGMA data_version`` or this
    connection's ``total_changes`` moved, and then only the rows added since (a new
    embedder generation, after ``reembed``, reloads everything). Vectors of deleted
    records may linger until then; :func:`nearest_now` checks every candidate's record.
    """

    def __init__(self, expected: Callable[[], tuple[str, tuple[str, int]]]) -> None:
        # The store's target and its embedder's (name, dimension), as it is now.
        self._expected = expected
        self._version: tuple[int, int] | None = None
        self._generation: int | None = None
        self._last = 0
        self._rows: VectorRows | None = None
        self._seqs: list[int] = []
        self._ids: list[str] = []
        self._row: dict[int, int] = {}
        self._by_seq: Matrix = None  # each seq's row, -1 for none
        # Bumped whenever a row arrives for a seq that is not past every seq seen
        # before (a record's vector replaced, a deleted record's seq reused): a
        # scope's gathered copy of rows is only reused while this has not moved, and
        # its listing is the same (new records come with new, higher seqs).
        self._replaced = 0
        self._highest = -1
        self._scopes = ScopeCopies()

    def load(self, db: sqlite3.Connection) -> VectorRows:
        """The vectors (a row each, see :meth:`record`), current; on the connection's
        thread. :class:`EmbedderSwitchedError` when the file no longer records the
        store's embedder (``expected``): another process ran ``reembed``.

        A vector of another length than that embedder's is left out, never reshaped.
        """
        target, given = self._expected()
        dimension = given[1]
        row = db.execute("PRAGMA data_version").fetchone()
        version = (int(row[0]) if row is not None else 0, db.total_changes)
        if version != self._version:
            generation = _check_stored(db.execute(_STORED).fetchone(), target, given)
            if generation != self._generation or self._rows is None:
                self._generation, self._last = generation, 0
                self._rows = VectorRows(dimension)
                self._seqs, self._ids, self._row = [], [], {}
                self._highest = -1
                self._by_seq = numpy().full(0, -1, dtype=numpy().int64)
                self._scopes = ScopeCopies()
            rows = db.execute(_VECTORS_SINCE, (self._last,)).fetchall()
            if rows:
                self._last = int(rows[-1][0])
                size = 4 * dimension
                rows = [r for r in rows if len(r[3]) == size]
            if rows:
                self._add(
                    [(int(r[1]), str(r[2])) for r in rows],
                    from_blobs([bytes(r[3]) for r in rows], dimension),
                )
            self._version = version
        assert self._rows is not None
        return self._rows

    def new_connection(self) -> None:
        """Trust nothing the last connection saw (the store is opened again): its
        ``data_version`` and ``total_changes`` are not comparable with the next one's,
        so the next :meth:`load` reads every row added since, and each scope's rows
        are gathered again."""
        self._version = None
        self._scopes = ScopeCopies()

    @property
    def version(self) -> tuple[int, int] | None:
        """What :meth:`load` last saw: the file's ``data_version`` and this
        connection's ``total_changes`` (a scope's listing holds while it is the same)."""
        return self._version

    def record(self, row: int) -> tuple[int, str]:
        """The seq and id of the record whose vector is in ``row``."""
        return self._seqs[row], self._ids[row]

    def ids(self, rows: Sequence[int]) -> list[str]:
        """The ids of the records whose vectors are in ``rows``."""
        ids = self._ids
        return [ids[row] for row in rows]

    def positions(self, seqs: Matrix) -> tuple[Matrix, Matrix]:
        """Of ``seqs`` (an int64 array), those with a cached vector, and their rows."""
        inside = seqs[seqs < len(self._by_seq)]
        rows = self._by_seq[inside]
        return inside[rows >= 0], rows[rows >= 0]

    def _add(self, records: list[tuple[int, str]], vectors: Matrix) -> None:
        assert self._rows is not None
        positions = []
        for seq, record_id in records:
            row = self._row.get(seq)
            if row is None:
                row = self._row[seq] = len(self._seqs)
                self._seqs.append(seq)
                self._ids.append(record_id)
            else:
                self._ids[row] = record_id
            positions.append(row)
        self._rows.put(positions, vectors)
        np, seqs = numpy(), [seq for seq, _ in records]
        if min(seqs) <= self._highest:
            self._replaced += 1
        self._highest = max(self._highest, *seqs)
        if max(seqs) >= len(self._by_seq):
            grown = np.full(max(max(seqs) + 1, 2 * len(self._by_seq)), -1, dtype=np.int64)
            grown[: len(self._by_seq)] = self._by_seq
            self._by_seq = grown
        self._by_seq[seqs] = positions


_VECTORS_SINCE: Final = (
    "SELECT v.vseq, v.record_seq, r.id, v.vector FROM memory_vectors AS v "
    "JOIN memory_records AS r ON r.seq = v.record_seq WHERE v.vseq > ? ORDER BY v.vseq"
)
"""The vectors stored after a ``vseq``, each with its record's seq and id: a record
has a cached vector only when both match (:meth:`VectorCache.position`)."""


class SqliteVectorPrimitives:
    """Hybrid search's primitives on SQLite, mixed into ``SqliteMemoryStore``."""

    if TYPE_CHECKING:
        _commits: GroupCommit
        _vector_cache: VectorCache

        @property
        def _vector_check(self) -> tuple[str, tuple[str, int]]: ...

        def _reading(self) -> AbstractAsyncContextManager[aiosqlite.Connection]: ...

    async def _all_records(self, handle: aiosqlite.Connection) -> list[MemoryRecord]:
        rows = await self._commits.now(handle, all_rows)
        return [record_from_row(row) for row in rows]

    async def _replace_vectors(
        self, handle: aiosqlite.Connection, embedder: Embedder, made: dict[str, Matrix]
    ) -> None:
        self._commits.later(replace_now, embedder.name, embedder.dimension, made)

    async def _nearest(
        self, query: MemorySearchQuery, vector: Matrix, n: int, now: datetime
    ) -> list[tuple[float, str]]:
        async with self._reading() as conn:
            return await on_thread(
                conn, nearest_now, query, lambda: vector, n, now, self._vector_cache
            )
