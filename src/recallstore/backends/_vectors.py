"""Vector arithmetic for hybrid search (numpy, from the ``hybrid`` extra).

Every vector a store keeps is L2-normalised float32, so a cosine is a dot product.
numpy is imported here only, and only when a store is given an embedder: a
keyword-only store never needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recallstore.embedding import Embedder, QueryEmbedder
from recallstore.errors import ConfigurationError, MissingDependencyError

Matrix = Any
"""A numpy float32 array (a vector or a matrix of them); Any, as numpy is optional and
must not be imported to type-check a keyword-only code path."""

__all__ = ["Matrix", "embed_texts", "from_blobs", "numpy", "to_blob", "top_cosine"]


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
    raw = await (
        embedder.embed_queries(distinct)
        if queries and isinstance(embedder, QueryEmbedder)
        else embedder.embed(distinct)
    )
    if len(raw) != len(distinct):
        raise ConfigurationError(
            f"embedder {embedder.name!r} returned {len(raw)} vectors for {len(distinct)} texts"
        )
    matrix = np.asarray([list(vector) for vector in raw], dtype=np.float32)
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
    everything = n >= len(scores)
    chosen = np.arange(len(scores)) if everything else np.argpartition(-scores, n - 1)[:n]
    ordered = sorted(chosen.tolist(), key=lambda row: (-float(scores[row]), row))
    return [(float(scores[row]), int(row)) for row in ordered]
