"""Fusing a keyword ranking with a vector ranking (hybrid search).

Both rankings come from the same filtered set of records (scope, kinds, tags,
validity, expiry): the keyword one from ``query.rank_records`` (weighted BM25), the
vector one by cosine similarity to the query's embedding, each :data:`FUSION_DEPTH`
deep. :func:`fuse` merges them by score: each list's scores become z-scores (how far
above its own mean, in standard deviations, so neither scale dominates), added with
the weight :data:`VECTOR_WEIGHT` on the vector side; a record in one list only gets
nothing from the other. A list whose scores are all equal (a lone keyword match, say)
has no spread to measure: each of its records is credited :data:`TIED_CREDIT`, as the
list's best, not the 0 of its average (which is what an absent record gets). The
method and its one parameter were chosen on the LoCoMo dev split; every alternative
measured is in docs/benchmarks.md ("Hybrid search").
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal, TypeVar

_Key = TypeVar("_Key", bound=Hashable)

FusionMethod = Literal["score", "minmax", "zscore", "rrf"]

VECTOR_WEIGHT = 0.35
"""The vector side's weight in the fused score (BM25's is ``1 - VECTOR_WEIGHT``)."""
FUSION_METHOD: FusionMethod = "zscore"
"""How each ranking's scores are normalised before they are added."""
FUSION_DEPTH = 100
"""How many of each ranking's best records are fused."""
RRF_K = 60
"""Reciprocal rank fusion's constant (for the ``"rrf"`` method, measured, not used)."""
TIED_CREDIT = 1.0
"""The z-score method's credit for each candidate of a list whose scores are all equal
(a lone keyword match, say): one standard deviation above an absent record's 0."""


def fuse(
    keyword: Sequence[tuple[float, _Key]],
    vector: Sequence[tuple[float, _Key]],
    limit: int,
    *,
    method: FusionMethod = FUSION_METHOD,
    weight: float = VECTOR_WEIGHT,
) -> list[tuple[float, _Key]]:
    """The ``limit`` best keys of the two rankings (each best first) as (score, key).

    ``"zscore"`` (the default): ``(1 - weight) * z(bm25) + weight * z(cosine)``, each z
    over its own list (a record absent from a list gets 0 from it); a list whose scores
    are all equal gives each :data:`TIED_CREDIT`. ``"score"``: ``bm25 / best_bm25`` and
    the cosine as it is. ``"minmax"``: both min-max normalised over their own list.
    ``"rrf"``: ``1 / (RRF_K + rank)``, the weight applied the same way. Only vector
    candidates with a cosine above 0 take part. Equal fused scores keep the keyword
    ranking's order, then the vector ranking's.
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
    ranked = sorted(combined.items(), key=lambda item: (-item[1], order[item[0]]))
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
        if max(values) == min(values):
            # One candidate, or all equal: each is the list's best, not its average. (A
            # float mean of equal values need not equal them, so this is not spread 0.)
            return [(TIED_CREDIT, key) for _, key in ranking]
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
