"""Vector arithmetic for hybrid search (numpy, from the ``hybrid`` extra).

Every vector a store keeps is L2-normalised float32, so a cosine is a dot product.
numpy is imported here only, and only when a store is given an embedder: a
keyword-only store never needs it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final

from recallstore.embedding import Embedder, InProcessEmbedder
from recallstore.errors import EmbedderFailedError, MissingDependencyError

Matrix = Any
"""A numpy float32 array (a vector or a matrix of them); Any, as numpy is optional and
must not be imported to type-check a keyword-only code path."""

__all__ = [
    "EXACT_ROWS",
    "SHORTLIST_FACTOR",
    "SHORTLIST_SHARE",
    "Matrix",
    "VectorRows",
    "cosines",
    "cosines_when_made",
    "embed_texts",
    "embed_texts_now",
    "embedding_threads",
    "embeds_in_process",
    "from_blobs",
    "numpy",
    "to_blob",
    "top_cosine",
    "top_scores",
]

EXACT_ROWS: Final = 20_000
"""Up to this many vectors, a query is compared with every one of them."""
SHORTLIST_FACTOR: Final = 5
SHORTLIST_SHARE: Final = 50
"""Beyond :data:`EXACT_ROWS`, a query asking for ``n`` rows is compared exactly with a
shortlist of at least ``SHORTLIST_FACTOR * n`` rows and one row in ``SHORTLIST_SHARE``
(2 %), those whose sign bits differ least from the query's."""


def numpy() -> Any:
    """The numpy module; :class:`MissingDependencyError` naming the extra without it."""
    try:
        import numpy as np
    except ImportError as exc:
        raise MissingDependencyError("hybrid search (a store with an embedder)", "hybrid") from exc
    return np


async def embed_texts(
    embedder: Embedder, texts: Sequence[str], *, queries: bool = False, target: str = ""
) -> Matrix:
    """One unit vector per text (rows in order), each distinct text embedded once.

    Whatever goes wrong in the embedder — it raises, returns something other than one
    vector of ``dimension`` finite numbers per text (None, a generator, ragged rows) —
    raises :class:`EmbedderFailedError` naming it and ``target`` (the store): nothing
    is stored from it. Vectors are normalised in float64 after scaling by their largest
    component, so a vector of huge (or tiny) numbers keeps its direction instead of
    overflowing to zeros.
    """
    distinct = list(dict.fromkeys(texts))
    if not distinct:
        return numpy().zeros((0, embedder.dimension), dtype=numpy().float32)
    # Not isinstance(embedder, QueryEmbedder): a runtime protocol check costs more
    # than the rest of a search's vector work.
    embed_queries = getattr(embedder, "embed_queries", None) if queries else None
    try:
        raw = await (
            embed_queries(distinct) if callable(embed_queries) else embedder.embed(distinct)
        )
    except Exception as exc:  # the embedder's own failure (a provider error, a bug)
        raise _raised(embedder, target, exc) from exc
    return _unit_rows(embedder, texts, distinct, raw, target)


def embed_texts_now(
    embedder: InProcessEmbedder, texts: Sequence[str], *, queries: bool = False, target: str = ""
) -> Matrix:
    """:func:`embed_texts` by the embedder's ``embed_now``, in the calling thread."""
    distinct = list(dict.fromkeys(texts))
    if not distinct:
        return numpy().zeros((0, embedder.dimension), dtype=numpy().float32)
    try:
        raw = embedder.embed_now(distinct, queries=queries)
    except Exception as exc:  # the embedder's own failure (a bug, a model that failed)
        raise _raised(embedder, target, exc) from exc
    return _unit_rows(embedder, texts, distinct, raw, target)


def embeds_in_process(embedder: Embedder) -> bool:
    """Whether ``embedder`` offers ``embed_now`` (an :class:`InProcessEmbedder`);
    checked by attribute, as a runtime protocol check costs a search more."""
    return callable(getattr(embedder, "embed_now", None))


def embedding_threads() -> ThreadPoolExecutor:
    """The worker threads that embed queries in process, made on first use in each
    process (a forked child's copy has no threads, so it makes its own)."""
    with _THREADS_LOCK:
        pid = os.getpid()
        if pid not in _THREADS:
            _THREADS.clear()
            # As many as asyncio's default executor, whose threads embedded them before.
            workers = min(32, (os.cpu_count() or 1) + 4)
            _THREADS[pid] = ThreadPoolExecutor(workers, thread_name_prefix=_THREAD_NAME)
        return _THREADS[pid]


_THREADS: dict[int, ThreadPoolExecutor] = {}
_THREADS_LOCK = threading.Lock()
_THREAD_NAME = "recallstore-query"


def cosines_when_made(matrix: Matrix, vector: Future[Matrix]) -> Future[Matrix]:
    """:func:`cosines` of ``matrix`` with the vector ``vector`` will hold, computed as
    soon as it is made: in the query thread that made it, otherwise in one of
    :func:`embedding_threads` (never on an event loop's thread). The result raises
    what ``vector`` raised."""
    scores: Future[Matrix] = Future()

    def compute() -> None:
        try:
            scores.set_result(cosines(matrix, vector.result()))
        except BaseException as exc:  # the embedding's failure or cancellation: passed on
            scores.set_exception(exc)

    def made(_: Future[Matrix]) -> None:
        if threading.current_thread().name.startswith(_THREAD_NAME):
            compute()
        else:
            embedding_threads().submit(compute)

    vector.add_done_callback(made)
    return scores


def _raised(embedder: Embedder, target: str, exc: Exception) -> EmbedderFailedError:
    return EmbedderFailedError(target, embedder.name, f"it raised {type(exc).__name__}: {exc}")


def _unit_rows(
    embedder: Embedder, texts: Sequence[str], distinct: list[str], raw: object, target: str
) -> Matrix:
    """The unit rows of ``raw`` (the embedder's answer for ``distinct``), one for each
    of ``texts``; :class:`EmbedderFailedError` when ``raw`` is not such vectors."""
    np = numpy()
    name = embedder.name

    def failed(reason: str) -> EmbedderFailedError:
        return EmbedderFailedError(target, name, reason)

    if raw is None or isinstance(raw, str | bytes) or not hasattr(raw, "__len__"):
        raise failed(f"it returned {type(raw).__name__}, not a sequence of vectors")
    if len(raw) != len(distinct):
        raise failed(f"it returned {len(raw)} vectors for {len(distinct)} texts")
    try:
        matrix = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:  # ragged, or not numbers
        raise failed(
            f"it returned vectors that are not {embedder.dimension} numbers each: {exc}"
        ) from exc
    if matrix.ndim != 2 or matrix.shape[1] != embedder.dimension:
        raise failed(
            f"it declares dimension {embedder.dimension} but returned vectors of shape "
            f"{matrix.shape}"
        )
    if not np.isfinite(matrix).all():
        raise failed("it returned a vector that is not finite (NaN or infinity)")
    # Scaled first: the squares of 1e30 overflow float32 (stored as zeros before).
    largest = np.abs(matrix).max(axis=1, keepdims=True)
    matrix = matrix / np.where(largest > 0, largest, 1.0)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # A zero vector stays zero: it is close to nothing rather than an error.
    unit = (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    row = {text: index for index, text in enumerate(distinct)}
    return unit[[row[text] for text in texts]]


def to_blob(vector: Matrix) -> bytes:
    """A unit vector as stored in SQLite: little-endian float32."""
    return bytes(numpy().asarray(vector, dtype="<f4").tobytes())


def from_blobs(blobs: Sequence[bytes], dimension: int) -> Matrix:
    """Stored vectors back as one matrix (a row each)."""
    np = numpy()
    if not blobs:
        return np.zeros((0, dimension), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dimension)


def cosines(matrix: Matrix, query: Matrix, rows: Matrix | None = None) -> Matrix:
    """Each row of ``matrix`` (or each of its ``rows``, an index array) times the unit
    ``query``: their cosines.

    Row by row (``einsum``), not a BLAS matrix product: BLAS blocks rows, so a row's
    product there depends on where the row sits in the matrix (its last bit differs
    between a scope's matrix and a filtered one), and a backend that compares a
    superset of the admitted rows would rank near-ties unlike one that compares them
    alone. Here a row's cosine depends on the row and the query only. ``rows`` are
    gathered a block at a time, so each block is still in the CPU's cache when read."""
    np = numpy()
    if rows is None:
        return np.einsum("ij,j->i", matrix, query)
    scores = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), _BLOCK):
        block = matrix[rows[start : start + _BLOCK]]
        scores[start : start + _BLOCK] = np.einsum("ij,j->i", block, query)
    return scores


_BLOCK: Final = 2_048


def top_scores(scores: Matrix, n: int) -> list[tuple[float, int]]:
    """The ``n`` best of ``scores`` as (score, index), best first; equal scores in
    index order."""
    np = numpy()
    if n <= 0 or not len(scores):
        return []
    if n >= len(scores):
        chosen = np.arange(len(scores))
    else:
        # Rows tied with the n-th best are taken in row order, as the result is sorted.
        edge = np.partition(scores, len(scores) - n)[len(scores) - n]
        better = np.flatnonzero(scores > edge)
        chosen = np.concatenate((better, np.flatnonzero(scores == edge)[: n - len(better)]))
    ordered = chosen[np.lexsort((chosen, -scores[chosen]))]
    return list(zip(scores[ordered].tolist(), ordered.tolist(), strict=True))


def top_cosine(matrix: Matrix, query: Matrix, n: int) -> list[tuple[float, int]]:
    """The ``n`` rows of ``matrix`` closest to ``query`` as (cosine, row), best first;
    equal cosines in row order (:func:`cosines`, :func:`top_scores`)."""
    if n <= 0 or not len(matrix):
        return []
    return top_scores(cosines(matrix, query), n)


class VectorRows:
    """Unit vectors in one growing matrix, each row's sign bits kept beside it, and the
    rows closest to a query.

    Comparing a query with 100,000 vectors of 768 dimensions reads 300 MB, twice what a
    keyword search costs. So beyond :data:`EXACT_ROWS` rows the comparison runs in two
    steps: the Hamming distance between the query's sign bits and each row's (96 bytes
    a row at 768 dimensions) picks a shortlist, and only the shortlist is compared
    exactly. Rows tied at the shortlist's edge are taken in row order, so the result
    depends on the stored rows and the query alone. Up to :data:`EXACT_ROWS` rows the
    result is exact.
    """

    def __init__(self, dimension: int) -> None:
        np = numpy()
        self.dimension = dimension
        self.count = 0
        self._words = -(-dimension // 64)
        self._matrix = np.zeros((1024, dimension), dtype=np.float32)
        # Column-major (a word of every row, then the next word): each step of the
        # Hamming distance then runs over one contiguous array.
        self._bits = np.zeros((self._words, 1024), dtype=np.uint64)

    @property
    def matrix(self) -> Matrix:
        """The stored rows (a view: valid until the next :meth:`put`)."""
        return self._matrix[: self.count]

    def put(self, rows: Sequence[int], vectors: Matrix) -> None:
        """Store ``vectors`` at ``rows``: each an existing row (replaced) or
        :attr:`count` and up, in order (appended)."""
        np = numpy()
        if not len(rows):
            return
        needed = max(max(rows) + 1, self.count)
        if needed > len(self._matrix):
            size = max(needed, 2 * len(self._matrix))
            matrix = np.zeros((size, self.dimension), dtype=np.float32)
            matrix[: self.count] = self._matrix[: self.count]
            bits = np.zeros((self._words, size), dtype=np.uint64)
            bits[:, : self.count] = self._bits[:, : self.count]
            self._matrix, self._bits = matrix, bits
        at = np.asarray(rows, dtype=np.intp)
        self._matrix[at] = vectors
        self._bits[:, at] = self._signs(vectors).T
        self.count = needed

    def closest(self, query: Matrix, n: int) -> list[tuple[float, int]]:
        """The ``n`` rows closest to the unit ``query`` as (cosine, row), best first;
        equal cosines in row order. Exact up to :data:`EXACT_ROWS` rows, else the best
        of the shortlist (see the class)."""
        np = numpy()
        wanted = max(n * SHORTLIST_FACTOR, self.count // SHORTLIST_SHARE)
        if self.count <= EXACT_ROWS or wanted >= self.count:
            return top_cosine(self.matrix, query, n)
        distances = self._distances(query)
        counts = np.bincount(distances, minlength=self._words * 64 + 1)
        farthest = int(np.searchsorted(np.cumsum(counts), wanted))
        nearer = np.flatnonzero(distances < farthest)
        tied = np.flatnonzero(distances == farthest)[: wanted - len(nearer)]
        shortlist = np.sort(np.concatenate((nearer, tied)))
        best = top_cosine(self._matrix[shortlist], query, n)
        return [(score, int(shortlist[at])) for score, at in best]

    def _signs(self, vectors: Matrix) -> Matrix:
        """Each vector's signs packed into :attr:`_words` uint64 words (a row each)."""
        np = numpy()
        packed = np.packbits(np.asarray(vectors).reshape(-1, self.dimension) > 0, axis=1)
        padded = np.zeros((len(packed), self._words * 8), dtype=np.uint8)
        padded[:, : packed.shape[1]] = packed
        return padded.view(np.uint64)

    def _distances(self, query: Matrix) -> Matrix:
        """The Hamming distance of every row's sign bits from ``query``'s."""
        np = numpy()
        signs = self._signs(query)[0]
        total = np.zeros(self.count, dtype=np.uint16)
        differing = np.empty(self.count, dtype=np.uint64)
        counted = np.empty(self.count, dtype=np.uint8)
        for word in range(self._words):
            np.bitwise_xor(self._bits[word, : self.count], signs[word], out=differing)
            np.bitwise_count(differing, out=counted)
            total += counted
        return total
