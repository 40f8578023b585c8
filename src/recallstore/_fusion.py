"""Fusing a keyword ranking with a vector ranking (hybrid search).

Both rankings come from the same filtered set of records (scope, kinds, tags,
validity, expiry): the keyword one from ``_query.rank_records`` (weighted BM25), the
vector one by cosine similarity to the query's embedding. :func:`fuse` merges them by
score: BM25 divided by the best BM25 of the query (so 1.0 is the best keyword match
and a record without a query word has 0), cosine as it is (unit vectors; negative
counts as 0), added with the weight :data:`VECTOR_WEIGHT` on the cosine. The method and
its one parameter were chosen on the LoCoMo dev split; every alternative measured is
in docs/benchmarks.md ("Hybrid search").
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal, TypeVar

_Key = TypeVar("_Key", bound=Hashable)

FusionMethod = Literal["score", "minmax", "zscore", "rrf"]

VECTOR_WEIGHT = 0.5
"""The cosine's weight in the fused score (BM25's is ``1 - VECTOR_WEIGHT``)."""
FUSION_DEPTH = 100
"""How many of each ranking's best records are fused."""
RRF_K = 60
"""Reciprocal rank fusion's constant (for the ``"rrf"`` method, measured, not used)."""


def fuse(
    keyword: Sequence[tuple[float, _Key]],
    vector: Sequence[tuple[float, _Key]],
    limit: int,
    *,
    method: FusionMethod = "score",
    weight: float = VECTOR_WEIGHT,
) -> list[tuple[float, _Key]]:
    """The ``limit`` best keys of the two rankings (each best first) as (score, key).

    ``"score"``: ``(1 - weight) * bm25 / best_bm25 + weight * max(cosine, 0)``.
    ``"minmax"``: both scores min-max normalised over their own list first.
    ``"rrf"``: ``1 / (RRF_K + rank)`` summed, the weight applied the same way.
    Equal fused scores keep the keyword ranking's order, then the vector ranking's.
    """
    if limit <= 0:
        return []
    combined: dict[_Key, float] = {}
    order: dict[_Key, int] = {}
    # Only records at all similar (cosine > 0) take part from the vector side.
    vector = [(value, key) for value, key in vector if value > 0]
    parts = (
        (1.0 - weight, _normalised(keyword, method, cosine=False)),
        (weight, _normalised(vector, method, cosine=True)),
    )
    for part, ranking in parts:
        for value, key in ranking:
            combined[key] = combined.get(key, 0.0) + part * value
            order.setdefault(key, len(order))
    # A record with nothing of either ranking (no query word, a cosine <= 0) is no hit.
    ranked = sorted(
        (item for item in combined.items() if item[1] > 0),
        key=lambda item: (-item[1], order[item[0]]),
    )
    return [(score, key) for key, score in ranked[:limit]]


def _normalised(
    ranking: Sequence[tuple[float, _Key]], method: FusionMethod, *, cosine: bool
) -> list[tuple[float, _Key]]:
    if not ranking:
        return []
    if method == "rrf":
        return [(1.0 / (RRF_K + rank), key) for rank, (_, key) in enumerate(ranking, start=1)]
    values = [value for value, _ in ranking]
    if method == "zscore":
        mean = sum(values) / len(values)
        spread = (sum((value - mean) ** 2 for value in values) / len(values)) ** 0.5
        return [((value - mean) / spread if spread > 0 else 0.0, key) for value, key in ranking]
    if method == "minmax":
        low, high = min(values), max(values)
        span = high - low
        return [((value - low) / span if span > 0 else 1.0, key) for value, key in ranking]
    if cosine:
        # Kept as it is: a record far in meaning adds nothing, whatever its rank.
        return [(max(value, 0.0), key) for value, key in ranking]
    best = max(values)
    return [(value / best if best > 0 else 0.0, key) for value, key in ranking]
