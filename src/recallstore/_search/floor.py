"""The relevance floor: hits far below the best one are not worth a model's attention.

Search returns every record that matches at least one query term (the kit's S10/S11),
and hybrid search every record near in meaning, so a question with one good answer
comes back with a tail of memories that share a common word with it. The recall block
and the memory tools cut that tail: beyond the first :data:`ALWAYS_KEPT` hits, a hit is
kept when its score is at least :data:`RELATIVE_FLOOR` of the best hit's. The store's
``search`` itself is unchanged (its semantics are the kit's), and the floor needs
nothing but the scores in hand.

A fraction of the best score, not an absolute score, because scores mean different
things across queries, stores and ranking modes (BM25 grows with the query's words,
fused hybrid scores are z-scores over each query's candidates): a ratio is the one
reading all of them share, and it works for any backend whose scores are positive and
better-is-higher. Scores that are not (None, or a best score at or below 0) keep every
hit: there is nothing to measure against. The first few hits are always kept because
in a small store the scores say little: hybrid scores are z-scores over the candidates,
so among a handful of records a small difference in meaning becomes a large one in
score, and below-average candidates score below 0. The floor trims a tail; it never
empties a short list.

The value was calibrated on the LongMemEval and LoCoMo dev data (docs/benchmarks.md,
"The recall block"): the highest fraction that loses at most one answer from the
top 10 with the default embedder or keyword search alone (0.15 loses 2 of 60
LongMemEval and 14 of 760 LoCoMo questions with the embedder). Stricter floors (a
higher fraction, query-word coverage, the embedder's cosine against its level on
unrelated text) were measured on two halves of the dev questions
(``benchmarks/recall_floor.py``, docs/benchmarks.md "Signals for a relevance floor"):
each that shrinks the no-answer blocks also loses answers, so this one stays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, TypeVar

__all__ = ["ALWAYS_KEPT", "RELATIVE_FLOOR", "above_floor"]

RELATIVE_FLOOR: Final = 0.1
"""A hit is kept when its score is at least this fraction of the best hit's score."""

ALWAYS_KEPT: Final = 3
"""The best this many hits are kept whatever their scores."""

_Hit = TypeVar("_Hit")


def above_floor(
    hits: Sequence[_Hit], score: Callable[[_Hit], float | None], floor: float = RELATIVE_FLOOR
) -> list[_Hit]:
    """``hits`` (in their order): the first :data:`ALWAYS_KEPT`, then those whose
    ``score`` is at least ``floor`` times the best score among them; all of them when a
    score is missing or the best is not positive."""
    scores = [score(hit) for hit in hits]
    if not scores or any(value is None for value in scores):
        return list(hits)
    best = max(value for value in scores if value is not None)
    if best <= 0:
        return list(hits)
    return [
        hit
        for index, (hit, value) in enumerate(zip(hits, scores, strict=True))
        if index < ALWAYS_KEPT or value >= floor * best  # type: ignore[operator]
    ]
