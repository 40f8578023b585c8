"""Ranking maths the keyword backends share, so they agree on what "rarer" means.

Relevance scores are never compared across backends (S11 pins ordering only), but
every backend weighs a term by the same inverse document frequency.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

__all__ = ["Bm25", "lucene_idf"]

_K1 = 1.2
_B = 0.75


def lucene_idf(documents: int, containing: int) -> float:
    """Lucene's always-positive BM25 idf: common terms still count, rarer ones count more."""
    return math.log(1 + (documents - containing + 0.5) / (containing + 0.5))


class Bm25:
    """Okapi BM25 (k1=1.2, b=0.75) for ``terms``, statistics taken over ``corpus``."""

    def __init__(self, corpus: Mapping[str, Counter[str]], terms: Sequence[str]) -> None:
        self._terms = terms
        documents = max(len(corpus), 1)
        self._average_length = sum(c.total() for c in corpus.values()) / documents or 1.0
        self._idf = {
            term: lucene_idf(documents, sum(1 for counts in corpus.values() if term in counts))
            for term in terms
        }

    def score(self, counts: Counter[str]) -> float:
        """The BM25 score of one document's term counts; 0.0 when it matches no term."""
        length = counts.total()
        norm = _K1 * (1 - _B + _B * length / self._average_length)
        score = 0.0
        for term in self._terms:
            frequency = counts.get(term, 0)
            if frequency:
                score += self._idf[term] * frequency * (_K1 + 1) / (frequency + norm)
        return score
