"""The records nearest a query within a scope (SQLite): every row of the scope compared,
the best checked against the filters afterwards, as the in-memory backend ranks them.

A scope's rows are compared with the query before its filters are applied, so a row's
cosine must not depend on which other rows sit in the matrix beside it (BLAS's matrix
product's last bit did).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallstore.backends import _vectors
from recallstore.backends._hybrid import HybridSearch
from recallstore.backends._vectors import cosines, top_cosine
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite import vectors as sqlite_vectors
from recallstore.backends.sqlite.nearest import EARLY_CHECKS, nearest_now
from recallstore.backends.sqlite.rows import on_thread
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.testing import ToyEmbedder


@pytest.mark.parametrize("seed", range(20))
def test_a_rows_cosine_does_not_depend_on_the_rows_beside_it(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(2, 3_000))
    matrix = rng.standard_normal((rows, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = matrix[int(rng.integers(rows))]
    kept = np.sort(rng.choice(rows, size=int(rng.integers(1, rows)), replace=False))
    whole = cosines(matrix, query)
    assert np.array_equal(cosines(matrix[kept], query), whole[kept])
    best = top_cosine(matrix[kept], query, 10)
    assert [score for score, _ in best] == [float(whole[kept[at]]) for _, at in best]


async def _nearest_in_both(
    tmp_path: Path, scope_size: int, invalidated: bool = True, checks_after: list[int] | None = None
) -> tuple[list[tuple[float, int]], list[tuple[float, int]]]:
    # checks_after: SQLite is asked as a search asks it, the query's vector not made
    # until it is needed (its rows checked meanwhile); gains how many checks ran after.
    embedder = ToyEmbedder(dimension=48)
    scope = {"tenant": "t", "user": "me"}
    now = datetime.now(UTC)
    inputs = [
        MemoryWriteInput(
            scope=scope if n % 3 else {"tenant": "t", "user": f"other{n % 5}"},
            content=f"note {n} about {'garden' if n % 2 else 'boat'} {n % 17}",
            kind="fact" if n % 4 else "episode",
            expires_at=now - timedelta(days=1) if n % 11 == 0 else None,
        )
        for n in range(scope_size * 3 // 2)
    ]
    found: list[list[tuple[float, int]]] = []
    async with (
        SqliteMemoryStore(tmp_path / "m.db", embedder=embedder) as sqlite_store,
        InMemoryMemoryStore(embedder=embedder) as memory_store,
    ):
        for store in (sqlite_store, memory_store):
            written = await store.write(inputs)
            # The query's nearest are invalidated: more than the first pages fail.
            for record in written[: len(written) // 2 : 2] if invalidated else ():
                await store.invalidate(record.id)
            query = MemorySearchQuery(query="garden note 3", scope=scope, kinds=["fact"])
            raw = np.asarray((await embedder.embed(["garden note 3"]))[0], dtype=np.float32)
            vector = raw / np.linalg.norm(raw)
            if checks_after is not None and isinstance(store, SqliteMemoryStore):
                nearest = await _nearest_while_embedding(store, query, vector, checks_after)
            else:
                nearest = await store._nearest(query, vector, 100, datetime.now(UTC))
            ids = {record.id: n for n, record in enumerate(written)}
            found.append([(score, ids[key]) for score, key in nearest])
    return found[0], found[1]


async def _nearest_while_embedding(
    store: SqliteMemoryStore, query: MemorySearchQuery, vector: Any, checks_after: list[int]
) -> list[tuple[float, str]]:
    statements: list[str] = []

    def nearest(db: Any) -> list[tuple[float, str]]:
        def vector_of() -> Any:
            db.set_trace_callback(statements.append)
            return vector

        try:
            return nearest_now(
                db,
                query,
                vector_of,
                100,
                datetime.now(UTC),
                store._vector_cache,
                None,
                lambda: False,
            )
        finally:
            db.set_trace_callback(None)

    async with store._reading() as conn:
        found = await on_thread(conn, nearest)
    checks_after.append(sum("SELECT r.seq, r.id FROM memory_records" in sql for sql in statements))
    return found


@pytest.mark.parametrize("scope_size", [60, 100, 102, 900, 1_100])
async def test_sqlite_scope_nearest_equals_the_memory_backends(
    tmp_path: Path, scope_size: int
) -> None:
    sqlite_found, memory_found = await _nearest_in_both(tmp_path, scope_size)
    assert len(sqlite_found) == min(100, len(memory_found)) > 0
    assert sqlite_found == memory_found


@pytest.mark.parametrize("scope_size", [102, 300, 450, 1_100])
async def test_a_scopes_rows_checked_while_the_query_is_embedded_change_nothing(
    tmp_path: Path, scope_size: int
) -> None:
    checks_after: list[int] = []
    sqlite_found, memory_found = await _nearest_in_both(
        tmp_path, scope_size, checks_after=checks_after
    )
    assert len(sqlite_found) == min(100, len(memory_found)) > 0
    assert sqlite_found == memory_found
    # Up to EARLY_CHECKS rows were checked before the vector was asked for: a scope
    # within it needs no check after; a larger one checks some of the rest.
    assert EARLY_CHECKS == 500
    assert checks_after == [0] if scope_size <= EARLY_CHECKS else checks_after[0] > 0


async def test_a_scope_beyond_the_old_cut_is_compared_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A scope of 5,100 records was past the old cut (5,000): its nearest came from the
    # whole store's sign-bit shortlist (beyond EXACT_ROWS, lowered here so a small store
    # has one), not from its own rows. Now every scope up to SCAN_SCOPE is exact.
    monkeypatch.setattr(_vectors, "EXACT_ROWS", 100)
    assert sqlite_vectors.SCAN_SCOPE >= 5_100
    sqlite_found, memory_found = await _nearest_in_both(tmp_path, 7_650, invalidated=False)
    assert len(sqlite_found) == 100
    assert sqlite_found == memory_found


async def test_a_scopes_gathered_rows_follow_every_change_to_the_scope(tmp_path: Path) -> None:
    # A scope searched once keeps its rows gathered (sqlite.vectors._ScopeCopies); each
    # change below must show in the next search exactly as in the in-memory backend:
    # records added to the scope, deleted from it, a write elsewhere (the file changed,
    # the scope did not), a deleted record's number taken by a new record, another
    # connection's write.
    embedder = ToyEmbedder(dimension=48)
    me = {"tenant": "t", "user": "me"}
    other = {"tenant": "t", "user": "other"}
    text = "garden note 3"
    raw = np.asarray((await embedder.embed([text]))[0], dtype=np.float32)
    vector = raw / np.linalg.norm(raw)

    def notes(start: int, count: int, scope: dict[str, str]) -> list[MemoryWriteInput]:
        return [
            MemoryWriteInput(scope=scope, content=f"note {n} about garden {n % 13}")
            for n in range(start, start + count)
        ]

    async with (
        SqliteMemoryStore(tmp_path / "m.db", embedder=embedder) as sqlite_store,
        InMemoryMemoryStore(embedder=embedder) as memory_store,
    ):
        stores: list[HybridSearch[Any]] = [sqlite_store, memory_store]
        written: dict[int, list[str]] = {0: [], 1: []}
        contents: dict[str, str] = {}  # record id -> content, both stores' ids

        async def same_nearest() -> list[tuple[float, str]]:
            found = []
            for index, store in enumerate(stores):
                query = MemorySearchQuery(query=text, scope=me)
                nearest = await store._nearest(query, vector, 20, datetime.now(UTC))
                found.append([(score, contents[key]) for score, key in nearest])
                assert len(found[-1]) == min(20, len(written[index]))
            assert found[0] == found[1]
            return found[0]

        async def write(inputs: list[MemoryWriteInput]) -> None:
            for index, store in enumerate(stores):
                records = await store.write(inputs)
                contents.update((r.id, r.content) for r in records)
                written[index] += [r.id for r in records if r.scope == me]

        async def delete(position: int) -> None:
            for index, store in enumerate(stores):
                await store.delete(written[index].pop(position))

        await write(notes(0, 40, me) + notes(100, 40, other))
        first = await same_nearest()
        assert await same_nearest() == first  # from the gathered rows
        await write(notes(40, 5, me))
        await same_nearest()
        await delete(3)
        await delete(-1)  # the highest record number, taken again by the next write
        await same_nearest()
        await write(notes(45, 1, me))
        await same_nearest()
        await write(notes(200, 3, other))  # the file changed, the scope did not
        await same_nearest()
        async with SqliteMemoryStore(tmp_path / "m.db", embedder=embedder) as second:
            pairs: list[tuple[int, HybridSearch[Any]]] = [(0, second), (1, memory_store)]
            for index, store in pairs:
                records = await store.write(notes(60, 2, me))
                contents.update((r.id, r.content) for r in records)
                written[index] += [r.id for r in records]
        await same_nearest()
