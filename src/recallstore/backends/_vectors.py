"""Vector arithmetic for hybrid search (numpy, from the ``hybrid`` extra).

Every vector a store keeps is L2-normalised float32, so a cosine is a dot product.
numpy is imported here only, and only when a store is given an embedder: a
keyword-only store never needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from recallstore.embedding import Embedder
from recallstore.errors import ConfigurationError, MissingDependencyError

Matrix = Any
"""A numpy float32 array (a vector or a matrix of them); Any, as numpy is optional and
must not be imported to type-check a keyword-only code path."""

__all__ = [
    "EXACT_ROWS",
    "SHORTLIST_FACTOR",
    "SHORTLIST_SHARE",
    "Matrix",
    "VectorRows",
    "embed_texts",
    "from_blobs",
    "numpy",
    "to_blob",
    "top_cosine",
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


async def embed_texts(embedder: Embedder, texts: Sequence[str], *, queries: bool = False) -> Matrix:
    """One unit vector per text (rows in order), each distinct text embedded once.

    A vector of the wrong length, or one that is not finite, raises
    :class:`ConfigurationError` naming the embedder: nothing is stored from it.
    """
    np = numpy()
    distinct = list(dict.fromkeys(texts))
    if not distinct:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    # Not isinstance(embedder, QueryEmbedder): a runtime protocol check costs more
    # than the rest of a search's vector work.
    embed_queries = getattr(embedder, "embed_queries", None) if queries else None
    raw = await (embed_queries(distinct) if callable(embed_queries) else embedder.embed(distinct))
    if len(raw) != len(distinct):
        raise ConfigurationError(
            f"embedder {embedder.name!r} returned {len(raw)} vectors for {len(distinct)} texts"
        )
    try:
        matrix = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:  # ragged, or not numbers
        raise ConfigurationError(
            f"embedder {embedder.name!r} returned vectors that are not {embedder.dimension} "
            f"numbers each: {exc}"
        ) from exc
    if matrix.ndim != 2 or matrix.shape[1] != embedder.dimension:
        raise ConfigurationError(
            f"embedder {embedder.name!r} declares dimension {embedder.dimension} but returned "
            f"vectors of shape {matrix.shape}"
        )
    if not np.isfinite(matrix).all():
        raise ConfigurationError(f"embedder {embedder.name!r} returned a non-finite vector")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # A zero vector stays zero: it is close to nothing rather than an error.
    matrix = matrix / np.where(norms > 0, norms, 1.0)
    row = {text: index for index, text in enumerate(distinct)}
    return matrix[[row[text] for text in texts]]


def to_blob(vector: Matrix) -> bytes:
    """A unit vector as stored in SQLite: little-endian float32."""
    return bytes(numpy().asarray(vector, dtype="<f4").tobytes())


def from_blobs(blobs: Sequence[bytes], dimension: int) -> Matrix:
    """Stored vectors back as one matrix (a row each)."""
    np = numpy()
    if not blobs:
        return np.zeros((0, dimension), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dimension)


def top_cosine(matrix: Matrix, query: Matrix, n: int) -> list[tuple[float, int]]:
    """The ``n`` rows of ``matrix`` closest to ``query`` as (cosine, row), best first;
    equal cosines in row order."""
    np = numpy()
    if n <= 0 or not len(matrix):
        return []
    scores = matrix @ query
    if n >= len(scores):
        chosen = np.arange(len(scores))
    else:
        # Rows tied with the n-th best are taken in row order, as the result is sorted.
        edge = np.partition(scores, len(scores) - n)[len(scores) - n]
        better = np.flatnonzero(scores > edge)
        chosen = np.concatenate((better, np.flatnonzero(scores == edge)[: n - len(better)]))
    ordered = chosen[np.lexsort((chosen, -scores[chosen]))]
    return list(zip(scores[ordered].tolist(), ordered.tolist(), strict=True))


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
