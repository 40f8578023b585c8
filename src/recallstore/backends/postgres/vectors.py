"""The Postgres backend's vectors (hybrid search): schema, writes, nearest records.

``memory_embedder`` records the one embedder that made the vectors and where they
live (``storage``, schema version 10): in pgvector (``postgres.pgvector``, chosen when
the first embedder is recorded and the extension is there) or, as before, a ``real[]``
per record in ``memory_vectors`` (schema version 6), deleted with its record (``ON
DELETE CASCADE``). In ``real[]`` the nearest records are found among the records
passing the query's filters: the scope's rows come through the scope index, their
vectors are compared in numpy, so a scoped search costs what the scope costs; an
unscoped one reads every vector. Stores recorded before version 10 stay in ``real[]``
until :func:`move_vectors` is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from recallstore.backends._vectors import Matrix, numpy, top_cosine
from recallstore.backends.postgres import pgvector
from recallstore.backends.postgres.pgvector import VectorStorage
from recallstore.backends.postgres.scope_terms import SCOPE_CHECK, PairFrequencies
from recallstore.embedding import Embedder
from recallstore.errors import ConfigurationError, EmbedderMismatchError, EmbedderSwitchedError
from recallstore.records import MemoryRecord, MemorySearchQuery

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "check_embedder",
    "insert_vectors",
    "lock_embedder",
    "migration",
    "move_vectors",
    "nearest_ids",
    "record_embedder",
    "replace_vectors",
    "storage_migration",
]


def migration(schema: str) -> list[str]:
    """Schema version 6."""
    return [
        f"""CREATE TABLE {schema}.memory_vectors (
            record_id text PRIMARY KEY
                REFERENCES {schema}.memory_records (id) ON DELETE CASCADE,
            vector real[] NOT NULL
        )""",
        f"""CREATE TABLE {schema}.memory_embedder (
            only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
            name text NOT NULL,
            dimension integer NOT NULL,
            generation integer NOT NULL,
            recorded_at timestamptz NOT NULL DEFAULT now()
        )""",
    ]


def storage_migration(schema: str) -> list[str]:
    """Schema version 10: where the vectors live; every embedder recorded before stays
    in ``real[]`` (a move is :func:`move_vectors`, never a migration)."""
    return [
        f"ALTER TABLE {schema}.memory_embedder ADD COLUMN storage text NOT NULL "
        "DEFAULT 'array' CHECK (storage IN ('array', 'pgvector'))"
    ]


def _storage(value: object) -> VectorStorage:
    return "pgvector" if value == "pgvector" else "array"


async def record_embedder(
    conn: AsyncConnection[Any], schema: str, target: str, embedder: Embedder
) -> VectorStorage:
    """Check ``embedder`` against the recorded one, recording it when there is none
    (its vectors in pgvector when the extension is there, else ``real[]``);
    :class:`EmbedderMismatchError` (nothing written) when they differ. Returns where
    the vectors live."""
    given = (embedder.name, embedder.dimension)
    async with conn.transaction():
        # One recorder at a time (the migrations' lock): two first openers would
        # both create the pgvector table.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (schema,))
        cursor = await conn.execute(
            f"SELECT name, dimension, storage FROM {schema}.memory_embedder"
        )
        row = await cursor.fetchone()
        if row is None:
            storage: VectorStorage = "array"
            if await pgvector.enable(conn, embedder.dimension):
                storage = "pgvector"
                await pgvector.create_table(conn, schema, embedder.dimension)
                await pgvector.create_index(conn, schema)
            await conn.execute(
                f"INSERT INTO {schema}.memory_embedder (name, dimension, generation, storage) "
                "VALUES (%s, %s, 1, %s)",
                (*given, storage),
            )
            return storage
    if (str(row[0]), int(row[1])) != given:
        raise EmbedderMismatchError(target, (str(row[0]), int(row[1])), given)
    return _storage(row[2])


async def check_embedder(
    conn: AsyncConnection[Any],
    schema: str,
    target: str,
    given: tuple[str, int],
    *,
    lock: bool = False,
) -> VectorStorage:
    """Where the vectors live; :class:`EmbedderSwitchedError` unless the recorded
    embedder is still ``given`` (name, dimension): another process may have run
    ``reembed`` since we opened.

    With ``lock`` (a write transaction) the row is held ``FOR SHARE`` until the commit:
    a ``reembed`` (which locks it ``FOR UPDATE`` first, :func:`lock_embedder`) waits
    for our vectors and replaces them, or we wait for it and see its embedder.
    """
    cursor = await conn.execute(_recorded_sql(schema) + (" FOR SHARE" if lock else ""))
    return _checked(await cursor.fetchone(), target, given)


def _recorded_sql(schema: str) -> str:
    return f"SELECT name, dimension, storage FROM {schema}.memory_embedder"


def _checked(row: Sequence[Any] | None, target: str, given: tuple[str, int]) -> VectorStorage:
    """Where the vectors live, by the recorded embedder's row (none: ``real[]``);
    :class:`EmbedderSwitchedError` when it is not ``given``."""
    if row is None:
        return "array"
    if (str(row[0]), int(row[1])) != given:
        raise EmbedderSwitchedError(target, (str(row[0]), int(row[1])), given)
    return _storage(row[2])


async def lock_embedder(conn: AsyncConnection[Any], schema: str) -> None:
    """Hold the recorded embedder ``FOR UPDATE`` until the transaction ends (``reembed``,
    before it reads the records): writers of vectors wait, see :func:`check_embedder`."""
    await conn.execute(f"SELECT 1 FROM {schema}.memory_embedder FOR UPDATE")


async def insert_vectors(
    conn: AsyncConnection[Any],
    schema: str,
    records: Sequence[MemoryRecord],
    vectors: Sequence[Matrix],
    storage: VectorStorage = "array",
) -> None:
    """Store ``vectors`` beside ``records`` (in the caller's transaction)."""
    if storage == "pgvector":
        made = {record.id: vector for record, vector in zip(records, vectors, strict=True)}
        await pgvector.insert(conn, schema, made, replace=False)
        return
    async with conn.cursor() as cursor:
        await cursor.executemany(
            f"INSERT INTO {schema}.memory_vectors (record_id, vector) VALUES (%s, %s) "
            "ON CONFLICT (record_id) DO UPDATE SET vector = excluded.vector",
            [
                (record.id, [float(value) for value in vector])
                for record, vector in zip(records, vectors, strict=True)
            ],
        )


async def nearest_ids(
    conn: AsyncConnection[Any],
    schema: str,
    query: MemorySearchQuery,
    vector: Matrix,
    n: int,
    now: datetime,
    embedder: tuple[str, tuple[str, int]],
    storage: VectorStorage | None = None,
    common: PairFrequencies | None = None,
) -> list[tuple[float, str]]:
    """The ids of the ``n`` records passing ``query``'s filters closest to ``vector``
    (``common``: the scope pairs' shares, ``postgres.scope_terms``).

    ``embedder`` is the store's target and its embedder's (name, dimension), checked
    against the recorded one in the snapshot the vectors are read from; a vector of
    another length is left out, never compared. ``storage`` is where the store last
    knew its vectors to live: in pgvector, the check and the search travel together
    (:func:`_nearest_at_once`).
    """
    # Here, not at the top: _postgres_search imports the schema, which imports us.
    from recallstore.backends.postgres.search import filter_clauses

    np = numpy()
    target, given = embedder
    where, params, scope = filter_clauses(query, now, common)
    if scope is not None:
        where = ["r.search_text @@ %s::tsquery", SCOPE_CHECK, *where]
        params = [scope.indexed, scope.checked, *params]
    if storage == "pgvector":
        found = await _nearest_at_once(conn, schema, where, params, vector, n, embedder)
        if found is not None:
            return found
    # Pipelined: BEGIN, the isolation level and the embedder check travel together, then
    # the settings with the nearest-records query: two round trips and the commit, not
    # six (each a wake-up for the server and for us: they add up on a busy machine).
    async with conn.pipeline(), conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        storage = await check_embedder(conn, schema, target, given)
        if storage == "pgvector":
            return await pgvector.nearest(conn, schema, where, params, vector, n)
        cursor = await conn.execute(
            f"SELECT r.id, v.vector FROM {schema}.memory_records AS r "
            f"JOIN {schema}.memory_vectors AS v ON v.record_id = r.id "
            f"WHERE {' AND '.join(where) or 'TRUE'}",
            params,
        )
        rows = [row for row in await cursor.fetchall() if len(row[1]) == given[1]]
    if not rows:
        return []
    matrix = np.asarray([row[1] for row in rows], dtype=np.float32)
    return [(score, str(rows[row][0])) for score, row in top_cosine(matrix, vector, n)]


async def _nearest_at_once(
    conn: AsyncConnection[Any],
    schema: str,
    where: Sequence[str],
    params: Sequence[Any],
    vector: Matrix,
    n: int,
    embedder: tuple[str, tuple[str, int]],
) -> list[tuple[float, str]] | None:
    """The nearest records in pgvector, in one round trip: the transaction, the
    embedder check and the search (``pgvector.nearest_sql``) are sent together and
    read after. None when the check finds the vectors moved to ``real[]``, or the
    search failed because they moved or changed dimension since the store last
    looked: the checked path then says which (or raises what the check raises)."""
    from psycopg.errors import DataException, UndefinedTable

    target, given = embedder
    try:
        async with conn.pipeline() as pipeline:
            await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            recorded = await conn.execute(_recorded_sql(schema))
            found = await pgvector.send_nearest(conn, schema, where, params, vector, n)
            await conn.execute("COMMIT")
            await pipeline.sync()
            row = await recorded.fetchone()
            if _checked(row, target, given) != "pgvector":
                return None
            return await pgvector.nearest_found(found)
    except (UndefinedTable, DataException):
        await conn.rollback()  # the BEGIN sent above, aborted by the error
        return None


async def replace_vectors(
    conn: AsyncConnection[Any], schema: str, embedder: Embedder, made: dict[str, Matrix]
) -> None:
    """Every vector replaced by ``made`` (ids no longer stored are skipped) and
    ``embedder`` recorded, in the caller's transaction (for ``reembed``); the vectors
    stay where they lived, in a pgvector column of the new dimension."""
    cursor = await conn.execute(f"SELECT storage FROM {schema}.memory_embedder")
    row = await cursor.fetchone()
    storage = _storage(row[0] if row is not None else "array")
    if storage == "pgvector":
        if embedder.dimension > pgvector.MAX_INDEXED_DIMENSION:
            raise ConfigurationError(
                f"pgvector's HNSW index takes at most {pgvector.MAX_INDEXED_DIMENSION} "
                f"dimensions, not {embedder.dimension}: move the vectors to real[] first "
                "(move_vectors('array'))"
            )
        await pgvector.drop_table(conn, schema)
        await pgvector.create_table(conn, schema, embedder.dimension)
        await pgvector.insert(conn, schema, made, replace=True)
        await pgvector.create_index(conn, schema)
    else:
        await conn.execute(f"DELETE FROM {schema}.memory_vectors")
        async with conn.cursor() as cursor:
            await cursor.executemany(
                f"INSERT INTO {schema}.memory_vectors (record_id, vector) "
                f"SELECT id, %s FROM {schema}.memory_records WHERE id = %s",
                [([float(value) for value in vector], key) for key, vector in made.items()],
            )
    await conn.execute(
        f"INSERT INTO {schema}.memory_embedder (name, dimension, generation, storage) "
        "VALUES (%s, %s, 1, %s) ON CONFLICT (only_row) DO UPDATE SET name = excluded.name, "
        f"dimension = excluded.dimension, generation = {schema}.memory_embedder.generation + 1, "
        "recorded_at = now()",
        (embedder.name, embedder.dimension, storage),
    )


async def move_vectors(
    conn: AsyncConnection[Any], schema: str, target: str, to: VectorStorage
) -> int:
    """Move every vector to ``to`` in the caller's transaction (the embedder row held
    ``FOR UPDATE``, so writers of vectors wait); how many moved. Nothing to move
    without a recorded embedder; :class:`ConfigurationError` (nothing changed) when
    pgvector is asked for and the extension cannot be had here."""
    if to not in pgvector.STORAGE_LABELS:
        raise ConfigurationError(f"to must be 'pgvector' or 'array', got {to!r}")
    cursor = await conn.execute(
        f"SELECT dimension, storage FROM {schema}.memory_embedder FOR UPDATE"
    )
    row = await cursor.fetchone()
    if row is None or _storage(row[1]) == to:
        return 0
    dimension = int(row[0])
    if to == "pgvector" and not await pgvector.enable(conn, dimension):
        raise ConfigurationError(
            f"cannot move the vectors of {target} to pgvector: the 'vector' extension is "
            f"not available to this role, or {dimension} dimensions are more than its "
            f"HNSW index takes ({pgvector.MAX_INDEXED_DIMENSION})"
        )
    moved = await pgvector.move_rows(conn, schema, to, dimension)
    await conn.execute(f"UPDATE {schema}.memory_embedder SET storage = %s", (to,))
    return moved
