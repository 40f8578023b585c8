"""The Postgres backend's vectors in pgvector: a ``vector(d)`` column under an HNSW index.

When the database offers the ``vector`` extension (pgvector), a store that records its
first embedder keeps the vectors in ``memory_embeddings`` (``vector(d)``, one row per
record, deleted with it) under an HNSW index on cosine distance, and finds the nearest
records with it inside the query's filters. pgvector 0.8's iterative index scans
(``hnsw.iterative_scan``) keep reading the index until enough records pass the
filters, so a narrow scope is not starved; for a scope small enough the planner reads
the scope's records and sorts them exactly instead. Without the extension (or for more
than :data:`MAX_INDEXED_DIMENSION` dimensions) the vectors stay in ``real[]``
(``postgres.vectors``). A store moves between the two only on
:meth:`~recallstore.backends.postgres.PostgresMemoryStore.move_vectors`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from recallstore.backends._vectors import Matrix

if TYPE_CHECKING:
    from psycopg import AsyncConnection, AsyncCursor

__all__ = [
    "MAX_INDEXED_DIMENSION",
    "STORAGE_LABELS",
    "VectorStorage",
    "create_table",
    "deferred_key_migration",
    "drop_table",
    "enable",
    "insert",
    "nearest",
    "nearest_found",
    "nearest_sql",
    "send_nearest",
]

VectorStorage = Literal["array", "pgvector"]
"""Where a Postgres store keeps its vectors: ``real[]`` or a pgvector ``vector(d)``."""

STORAGE_LABELS: Final[dict[str, str]] = {"pgvector": "pgvector (HNSW, cosine)", "array": "real[]"}
"""How ``describe()`` names each storage."""

MAX_INDEXED_DIMENSION: Final = 2_000
"""pgvector's HNSW index takes ``vector`` columns of at most this many dimensions."""

_EF_SEARCH_FLOOR: Final = 40  # pgvector's default candidate list


def _as_list(vector: Matrix) -> list[float]:
    return [float(value) for value in vector]


async def enable(conn: AsyncConnection[Any], dimension: int) -> bool:
    """Whether vectors of ``dimension`` can live in pgvector here: the extension is
    installed, or available and created now (in a savepoint: without the privilege
    to create it, nothing is left behind)."""
    import psycopg

    if dimension > MAX_INDEXED_DIMENSION:
        return False
    cursor = await conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    if await cursor.fetchone() is not None:
        return True
    cursor = await conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    if await cursor.fetchone() is None:
        return False
    try:
        async with conn.transaction():
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error:
        return False
    return True


async def create_table(conn: AsyncConnection[Any], schema: str, dimension: int) -> None:
    """``memory_embeddings`` for vectors of ``dimension`` (its HNSW index is built by
    :func:`create_index`, after a bulk load when there is one)."""
    await conn.execute(
        f"""CREATE TABLE {schema}.memory_embeddings (
            record_id text PRIMARY KEY
                REFERENCES {schema}.memory_records (id) ON DELETE CASCADE
                DEFERRABLE INITIALLY DEFERRED,
            embedding vector({int(dimension)}) NOT NULL
        )"""
    )


def deferred_key_migration(schema: str) -> list[str]:
    """Schema version 11: ``memory_embeddings``' foreign key checked at commit, so a
    write inserts its vectors before its records (see :func:`insert`)."""
    return [
        f"""DO $$ BEGIN
            IF to_regclass('{schema}.memory_embeddings') IS NOT NULL THEN
                ALTER TABLE {schema}.memory_embeddings
                    ALTER CONSTRAINT memory_embeddings_record_id_fkey
                    DEFERRABLE INITIALLY DEFERRED;
            END IF;
        END $$"""
    ]


async def create_index(conn: AsyncConnection[Any], schema: str) -> None:
    """The HNSW index on cosine distance (unit vectors: cosine is their dot product)."""
    # Rows inserted in this transaction leave foreign-key checks pending (deferred),
    # and Postgres builds no index on a table with pending checks: run them now.
    await conn.execute(f"SET CONSTRAINTS {schema}.memory_embeddings_record_id_fkey IMMEDIATE")
    await conn.execute(
        f"CREATE INDEX memory_embeddings_hnsw ON {schema}.memory_embeddings "
        "USING hnsw (embedding vector_cosine_ops)"
    )


async def drop_table(conn: AsyncConnection[Any], schema: str) -> None:
    """``memory_embeddings`` and its index dropped (a move, or a new dimension)."""
    await conn.execute(f"DROP TABLE IF EXISTS {schema}.memory_embeddings")


async def insert(
    conn: AsyncConnection[Any], schema: str, vectors: Mapping[str, Matrix], *, replace: bool
) -> None:
    """Store ``vectors`` by record id, in the caller's transaction. ``replace`` (a
    re-embed) skips ids no longer stored; otherwise the records are being inserted, and
    their rows may come after these (the foreign key is checked at commit): inserting
    the records takes the search statistics' row lock until commit, so the HNSW inserts,
    most of a vector write, run first, beside other writers', not while they wait."""
    sql = (
        f"INSERT INTO {schema}.memory_embeddings (record_id, embedding) "
        f"SELECT id, %s::real[]::vector FROM {schema}.memory_records WHERE id = %s"
        if replace
        else f"INSERT INTO {schema}.memory_embeddings (record_id, embedding) "
        "VALUES (%s, %s::real[]::vector) "
        "ON CONFLICT (record_id) DO UPDATE SET embedding = excluded.embedding"
    )
    rows = [
        (_as_list(vector), key) if replace else (key, _as_list(vector))
        for key, vector in vectors.items()
    ]
    async with conn.cursor() as cursor:
        await cursor.executemany(sql, rows)


async def nearest(
    conn: AsyncConnection[Any],
    schema: str,
    where: Sequence[str],
    params: Sequence[Any],
    vector: Matrix,
    n: int,
) -> list[tuple[float, str]]:
    """(cosine, id) of the ``n`` records passing ``where`` (on ``memory_records AS r``)
    nearest ``vector``, best first, in the caller's transaction."""
    return await nearest_found(await send_nearest(conn, schema, where, params, vector, n))


async def send_nearest(
    conn: AsyncConnection[Any],
    schema: str,
    where: Sequence[str],
    params: Sequence[Any],
    vector: Matrix,
    n: int,
) -> AsyncCursor[Any]:
    """Send the search's settings and its one statement (:func:`nearest_sql`) in the
    caller's transaction, without waiting for them (in a pipeline, they travel with
    whatever else is queued); :func:`nearest_found` reads the answer."""
    # Iterative scans (pgvector 0.8) read on through the index until n rows pass the
    # filters; relaxed order lets them, and the rows are sorted again on reading.
    await conn.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
        "set_config('hnsw.ef_search', %s, true)",
        (str(max(_EF_SEARCH_FLOOR, min(n, 1_000))),),
    )
    found = _as_list(vector)
    return await conn.execute(nearest_sql(schema, where), [found, *params, n, found, *params, n, n])


def nearest_sql(schema: str, where: Sequence[str]) -> str:
    """The nearest records in one statement: the index's answer, and the exact order
    over the filtered records when the index gave fewer than asked.

    The rows are (id, cosine distance, exact). The first part may read the HNSW index
    (the planner's choice: for a small scope it reads the scope's rows and sorts them);
    HNSW is approximate, and a scope smaller than ``n`` or a record far from every
    other one leaves it short. Only then does the second part run (its condition is a
    one-time filter on the first part's count), ordering by an expression the index
    cannot serve (``+ 0``): exact distances over what passes ``where``. Parameters:
    the vector, ``where``'s, ``n``, then the same three again and ``n`` once more.
    """
    rows = (
        f"FROM {schema}.memory_embeddings AS e "
        f"JOIN {schema}.memory_records AS r ON r.id = e.record_id "
        f"WHERE {' AND '.join(where) or 'TRUE'}"
    )
    return (
        "WITH approximate AS MATERIALIZED ("
        f"SELECT r.id, e.embedding <=> %s::real[]::vector AS distance {rows} "
        "ORDER BY distance LIMIT %s) "
        "SELECT id, distance, false FROM approximate UNION ALL ("
        f"SELECT r.id, (e.embedding <=> %s::real[]::vector) + 0 AS distance, true {rows} "
        "AND (SELECT count(*) FROM approximate) < %s ORDER BY distance LIMIT %s)"
    )


async def nearest_found(cursor: AsyncCursor[Any]) -> list[tuple[float, str]]:
    """(cosine, id) best first, from the rows of :func:`nearest_sql`: the exact ones
    when there are any (the index fell short), else the index's."""
    rows = await cursor.fetchall()
    chosen = [row for row in rows if row[2]] or rows
    # NaN (a zero vector) as cosine 0, as numpy's comparison in real[] gives it.
    found = sorted((1.0 if value != value else float(value), str(key)) for key, value, _ in chosen)
    return [(1.0 - distance, key) for distance, key in found]


async def move_rows(
    conn: AsyncConnection[Any], schema: str, to: VectorStorage, dimension: int
) -> int:
    """Every vector copied from the other storage into ``to`` and the other emptied,
    in the caller's transaction; how many moved."""
    if to == "pgvector":
        await create_table(conn, schema, dimension)
        # Counted in the statement (RETURNING), the same in and out of a pipeline.
        cursor = await conn.execute(
            f"WITH moved AS (INSERT INTO {schema}.memory_embeddings (record_id, embedding) "
            f"SELECT record_id, vector::vector FROM {schema}.memory_vectors "
            "WHERE cardinality(vector) = %s RETURNING 1) SELECT count(*) FROM moved",
            (dimension,),
        )
        moved = await cursor.fetchone()
        await conn.execute(f"DELETE FROM {schema}.memory_vectors")
        await create_index(conn, schema)
    else:
        cursor = await conn.execute(
            f"WITH moved AS (INSERT INTO {schema}.memory_vectors (record_id, vector) "
            f"SELECT record_id, embedding::real[] FROM {schema}.memory_embeddings "
            "ON CONFLICT (record_id) DO UPDATE SET vector = excluded.vector RETURNING 1) "
            "SELECT count(*) FROM moved"
        )
        moved = await cursor.fetchone()
        await drop_table(conn, schema)
    return 0 if moved is None else int(moved[0])
