"""The SQLite backend's vectors (hybrid search): schema, writes, nearest records.

Each record's unit vector is a float32 BLOB in ``memory_vectors`` (schema version 6),
deleted with its record (``ON DELETE CASCADE``); ``memory_embedder`` holds the one
embedder's name and dimension the vectors were made with, so a store is never searched
with vectors of two models.

At query time the vectors are not read from the file: a per-store :class:`VectorCache`
holds every vector in one matrix (1.5 KB a record at 384 dimensions), kept current
incrementally (each vector row is read once: ``vseq`` only grows). Finding the
records nearest a query then costs what the scope costs, as keyword search does:

* within a scope of at most :data:`SCAN_SCOPE` records, the scope's records passing
  every filter are listed through the scope index and only their rows are compared;
* otherwise (unscoped, or a broad scope) the whole matrix is compared in one product,
  and the closest records are checked against the filters by primary key, widening
  until enough pass.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import aiosqlite

from recallstore.backends._sqlite_rows import RECORD_COLUMNS, fetchone, on_thread, record_from_row
from recallstore.backends._sqlite_search import _CHECK, _LOOKUP, _record_conditions
from recallstore.backends._vectors import Matrix, from_blobs, numpy, to_blob, top_cosine
from recallstore.embedding import Embedder
from recallstore.errors import EmbedderMismatchError
from recallstore.records import MemoryRecord, MemorySearchQuery, format_timestamp
from recallstore.store import utc_now

if TYPE_CHECKING:
    from recallstore.backends._sqlite_commit import GroupCommit

__all__ = [
    "MIGRATION",
    "SCAN_SCOPE",
    "SqliteVectorPrimitives",
    "VectorCache",
    "all_rows",
    "nearest_now",
    "record_embedder",
    "replace_now",
    "stored_embedder",
    "vector_statements",
]

SCAN_SCOPE: Final = 5_000
"""A scope of at most this many records has its vectors read from the file per query."""

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
    """Every vector of the file in one matrix, for searches too broad to read per query.

    Refreshed like ``FtsStatistics``: only when ``PRAGMA data_version`` or this
    connection's ``total_changes`` moved, and then only the rows added since (a new
    embedder generation, after ``reembed``, reloads everything). Vectors of deleted
    records may linger until then; :func:`nearest` checks every candidate's record.
    """

    def __init__(self) -> None:
        self._version: tuple[int, int] | None = None
        self._generation: int | None = None
        self._last = 0
        self._count = 0
        self._matrix: Matrix | None = None
        self._seqs: list[int] = []
        self._row: dict[int, int] = {}

    def load(self, db: sqlite3.Connection, dimension: int) -> tuple[Matrix, list[int]]:
        """The matrix (a row per vector) and the record seq of each row; on the
        connection's thread."""
        np = numpy()
        row = db.execute("PRAGMA data_version").fetchone()
        version = (int(row[0]) if row is not None else 0, db.total_changes)
        if version != self._version:
            stored = db.execute("SELECT generation FROM memory_embedder").fetchone()
            generation = None if stored is None else int(stored[0])
            if generation != self._generation or self._matrix is None:
                self._generation, self._last, self._count = generation, 0, 0
                self._matrix = np.zeros((1024, dimension), dtype=np.float32)
                self._seqs, self._row = [], {}
            rows = db.execute(
                "SELECT vseq, record_seq, vector FROM memory_vectors WHERE vseq > ? ORDER BY vseq",
                (self._last,),
            ).fetchall()
            if rows:
                self._add(
                    [int(r[1]) for r in rows], from_blobs([bytes(r[2]) for r in rows], dimension)
                )
                self._last = int(rows[-1][0])
            self._version = version
        assert self._matrix is not None
        return self._matrix[: self._count], self._seqs

    def position(self, seq: int) -> int | None:
        """The matrix row of record ``seq``'s vector, or None (no vector)."""
        return self._row.get(seq)

    def _add(self, seqs: list[int], vectors: Matrix) -> None:
        np = numpy()
        assert self._matrix is not None
        needed = self._count + len(seqs)
        if needed > len(self._matrix):
            grown = np.zeros(
                (max(needed, 2 * len(self._matrix)), self._matrix.shape[1]), np.float32
            )
            grown[: self._count] = self._matrix[: self._count]
            self._matrix = grown
        for seq, vector in zip(seqs, vectors, strict=True):
            row = self._row.get(seq)
            if row is None:
                row = self._row[seq] = self._count
                self._seqs.append(seq)
                self._count += 1
            self._matrix[row] = vector


# Only records with a vector row: the cache is keyed by seq, and a record written
# without an embedder may take the seq of a deleted one whose vector the cache still
# holds. CROSS JOIN keeps the records first (then each vector by its unique key).
_WITH_VECTOR: Final = (
    "SELECT r.seq, r.id FROM memory_records AS r "
    "CROSS JOIN memory_vectors AS v ON v.record_seq = r.seq"
)


def _filters(query: MemorySearchQuery, now: datetime) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    for key, value in query.scope.items():
        where.append(_CHECK["scope"])
        params.extend((key, value))
    for tag in query.tags or ():
        where.append(_CHECK["tag"])
        params.append(tag)
    more, more_params = _record_conditions(query, now)
    return [*where, *more], [*params, *more_params]


def _ids_by_seq(
    db: sqlite3.Connection, seqs: Sequence[int], query: MemorySearchQuery, now: datetime
) -> dict[int, str]:
    """The ids of the records among ``seqs`` that pass ``query``'s filters."""
    where, params = _filters(query, now)
    found: dict[int, str] = {}
    for start in range(0, len(seqs), 500):
        page = list(seqs[start : start + 500])
        condition = " AND ".join([f"r.seq IN ({', '.join('?' * len(page))})", *where])
        rows = db.execute(f"{_WITH_VECTOR} WHERE {condition}", [*page, *params]).fetchall()
        found.update((int(row[0]), str(row[1])) for row in rows)
    return found


def nearest_now(
    db: sqlite3.Connection,
    query: MemorySearchQuery,
    vector: Matrix,
    n: int,
    now: datetime,
    cache: VectorCache,
) -> list[tuple[float, str]]:
    """The ids of the ``n`` records passing ``query``'s filters closest to ``vector``,
    as (cosine, id), best first; on the connection's thread (one hand-off per search).

    The vectors come from ``cache``; within a scope of at most :data:`SCAN_SCOPE`
    records, the scope's records passing the filters are listed first (through the
    scope index) and only their rows of the matrix are compared.
    """
    dimension = int(vector.shape[0])
    matrix, seqs = cache.load(db, dimension)
    pairs = list(query.scope.items())
    counts = [
        int(
            db.execute(
                f"SELECT count(*) FROM ({_LOOKUP['scope']} LIMIT ?)", (*pair, SCAN_SCOPE + 1)
            ).fetchone()[0]
        )
        for pair in pairs
    ]
    if counts and min(counts) <= SCAN_SCOPE:
        driver = pairs[min(range(len(pairs)), key=counts.__getitem__)]
        where, params = _filters(query, now)
        rows = db.execute(
            f"{_WITH_VECTOR} WHERE r.seq IN ({_LOOKUP['scope']}) AND {' AND '.join(where)}",
            [*driver, *params],
        ).fetchall()
        positions, ids = [], []
        for seq, record_id in rows:
            position = cache.position(int(seq))
            if position is not None:
                positions.append(position)
                ids.append(str(record_id))
        best = top_cosine(matrix[positions], vector, n)
        return [(score, ids[at]) for score, at in best]
    wanted = n * 4
    while True:
        best = top_cosine(matrix, vector, wanted)
        passing = _ids_by_seq(db, [seqs[row] for _, row in best], query, now)
        found = [(score, passing[seqs[row]]) for score, row in best if seqs[row] in passing]
        if len(found) >= n or wanted >= len(matrix):
            return found[:n]
        wanted *= 4


class SqliteVectorPrimitives:
    """Hybrid search's primitives on SQLite, mixed into ``SqliteMemoryStore``."""

    if TYPE_CHECKING:
        _commits: GroupCommit
        _vector_cache: VectorCache

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
            return await on_thread(conn, nearest_now, query, vector, n, now, self._vector_cache)
