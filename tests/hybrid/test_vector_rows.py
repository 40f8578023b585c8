"""VectorRows: the in-process vectors behind broad hybrid searches.

Exact up to EXACT_ROWS rows; beyond, a shortlist by sign-bit Hamming distance is
compared exactly. These tests lower EXACT_ROWS so the shortlist runs on small data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from recallstore.backends import _vectors
from recallstore.backends._vectors import VectorRows, top_cosine
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.testing import ToyEmbedder


def _unit(rows: int, dimension: int, seed: int, offset: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, dimension)).astype(np.float32) + offset
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def _filled(matrix: np.ndarray) -> VectorRows:
    rows = VectorRows(matrix.shape[1])
    rows.put(range(len(matrix)), matrix)
    return rows


@pytest.mark.parametrize("dimension", [1, 63, 64, 100, 768])
def test_hamming_distances_count_the_differing_signs(dimension: int) -> None:
    matrix = _unit(300, dimension, seed=dimension)
    query = _unit(1, dimension, seed=dimension + 1)[0]
    expected = ((matrix > 0) != (query > 0)).sum(axis=1)
    assert _filled(matrix)._distances(query).tolist() == expected.tolist()


@pytest.mark.parametrize("seed", range(40))
def test_top_cosine_orders_equal_cosines_by_row_even_at_the_cut(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows, dimension = int(rng.integers(1, 200)), int(rng.integers(1, 4))
    matrix = rng.integers(-2, 3, size=(rows, dimension)).astype(np.float32)  # many ties
    query = rng.integers(-2, 3, size=dimension).astype(np.float32)
    n = int(rng.integers(0, rows + 3))
    scores = matrix @ query
    expected = sorted(range(rows), key=lambda row: (-float(scores[row]), row))[:n]
    assert top_cosine(matrix, query, n) == [(float(scores[row]), row) for row in expected]


def test_up_to_exact_rows_every_row_is_compared() -> None:
    matrix = _unit(2_000, 64, seed=1)
    query = _unit(1, 64, seed=2)[0]
    assert _filled(matrix).closest(query, 25) == top_cosine(matrix, query, 25)


def test_beyond_exact_rows_the_best_of_a_shortlist_are_returned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_vectors, "EXACT_ROWS", 100)
    # Topics, as sentence embeddings have: 50 centres, each row near one of them.
    centres = _unit(50, 96, seed=3)
    noise = _unit(5_000, 96, seed=4)
    matrix = centres[np.arange(5_000) % 50] + 0.8 * noise
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = centres[3] + 0.8 * _unit(1, 96, seed=5)[0]
    query /= np.linalg.norm(query)
    rows = _filled(matrix)
    found = rows.closest(query, 10)

    wanted = max(10 * _vectors.SHORTLIST_FACTOR, 5_000 // _vectors.SHORTLIST_SHARE)
    distances = rows._distances(query)
    edge = np.sort(distances)[wanted - 1]
    shortlist = np.flatnonzero(distances < edge).tolist()
    shortlist += np.flatnonzero(distances == edge)[: wanted - len(shortlist)].tolist()
    expected = top_cosine(matrix[sorted(shortlist)], query, 10)
    assert found == [(score, sorted(shortlist)[at]) for score, at in expected]
    # Most of the exact best are in it: close vectors share most of their signs.
    exact = {row for _, row in top_cosine(matrix, query, 10)}
    assert len(exact & {row for _, row in found}) >= 7


def test_a_stored_copy_of_the_query_is_always_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_vectors, "EXACT_ROWS", 100)
    matrix = _unit(3_000, 768, seed=5, offset=0.2)
    rows = _filled(matrix)
    for row in (0, 1_234, 2_999):
        assert rows.closest(matrix[row], 1)[0][1] == row


def test_replaced_rows_take_their_new_vectors_and_signs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_vectors, "EXACT_ROWS", 100)
    matrix = _unit(1_500, 32, seed=6)  # past the first allocation of 1,024 rows
    rows = _filled(matrix)
    moved = -matrix[7]
    rows.put([7], moved[None, :])
    assert rows.count == 1_500
    assert rows.closest(moved, 1)[0][1] == 7
    assert rows.closest(matrix[7], 1)[0][1] != 7


def test_the_result_depends_on_the_vectors_not_on_earlier_queries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_vectors, "EXACT_ROWS", 100)
    matrix = _unit(4_000, 128, seed=7, offset=0.1)
    queries = _unit(5, 128, seed=8)
    first = _filled(matrix)
    before = [first.closest(query, 20) for query in queries]
    grown = VectorRows(128)
    for start in range(0, 4_000, 333):  # written in many batches
        grown.put(range(start, min(start + 333, 4_000)), matrix[start : start + 333])
    assert [grown.closest(query, 20) for query in reversed(queries)] == before[::-1]


async def test_broad_sqlite_searches_use_the_shortlist_and_still_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_vectors, "EXACT_ROWS", 50)
    embedder = ToyEmbedder(dimension=64)
    async with SqliteMemoryStore(tmp_path / "memory.db", embedder=embedder) as store:
        noise = [
            MemoryWriteInput(scope={"user": f"u{n % 7}"}, content=f"clinic job {n}", kind="episode")
            for n in range(600)
        ]
        await store.write(noise)
        (fact,) = await store.write(
            [MemoryWriteInput(scope={"user": "u1"}, content="hired at an office")]
        )
        hits = await store.search(MemorySearchQuery(query="where does she work", kinds=["fact"]))
        assert [hit.record.id for hit in hits] == [fact.id]
        await store.invalidate(fact.id, reason="left the office")
        hits = await store.search(MemorySearchQuery(query="where does she work", kinds=["fact"]))
        assert hits == []
