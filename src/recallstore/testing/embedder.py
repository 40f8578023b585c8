"""``ToyEmbedder``: a small deterministic embedder for tests of hybrid search.

No model and no randomness: a text's vector counts its words in hashed buckets, and
the words of one *concept* share a bucket, so "where does she work" and "started a
job at the clinic" are close although they share no word. Give it your own concepts
for your tests; the defaults are what the conformance kit's hybrid sub-suite uses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

from recallstore._search.query import STOP_WORDS
from recallstore._search.text import tokenize

__all__ = ["DEFAULT_CONCEPTS", "ToyEmbedder"]

DEFAULT_CONCEPTS: Mapping[str, tuple[str, ...]] = {
    "work": ("work", "works", "job", "employer", "clinic", "office", "career", "hired"),
    "pet": ("pet", "pets", "dog", "puppy", "cat", "kitten", "hound"),
    "travel": ("travel", "trip", "journey", "vacation", "holiday", "flight"),
}
"""Concept → its words, for the kit's paraphrase tests."""


class ToyEmbedder:
    """Deterministic bag-of-concepts vectors of ``dimension`` floats (not normalised)."""

    def __init__(
        self,
        concepts: Mapping[str, Iterable[str]] = DEFAULT_CONCEPTS,
        *,
        dimension: int = 512,
        name: str = "recallstore-toy",
    ) -> None:
        self._concept = {word: concept for concept, words in concepts.items() for word in words}
        self._dimension = dimension
        self._name = f"{name}-{dimension}"

    @property
    def name(self) -> str:
        """``recallstore-toy-<dimension>`` unless named otherwise."""
        return self._name

    @property
    def dimension(self) -> int:
        """The vectors' length."""
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text: +1 in its concept's (or word's) bucket per non-stop word."""
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self._dimension
        for word in tokenize(text):
            if word in STOP_WORDS:
                continue
            digest = hashlib.blake2b(self._concept.get(word, word).encode(), digest_size=8)
            vector[int.from_bytes(digest.digest(), "big") % self._dimension] += 1.0
        return vector
