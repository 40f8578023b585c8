"""The ``Embedder`` protocol: what a store needs to search by meaning as well as by words.

An embedder is the user's: their provider's embeddings, a local model. It is async and
batched (one call embeds a whole write batch), and it names itself and its dimension;
a store records both beside the vectors it writes, so a store is never searched with
vectors of two models (see docs/hybrid-search.md). Nothing here imports a model or
numpy: the stores do, and only when they are given an embedder (the ``hybrid`` extra).

:func:`default_embedder` is recallstore's own (the ``semantic`` extra: a small model
whose weights come in a package, run offline with no torch); the word ``"default"``
names it wherever an embedder is configured (:func:`resolve_embedder`).
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable

from recallstore.errors import ConfigurationError

__all__ = [
    "DEFAULT_EMBEDDER",
    "Embedder",
    "InProcessEmbedder",
    "QueryEmbedder",
    "check_embedder",
    "default_embedder",
    "load_embedder",
    "resolve_embedder",
]

DEFAULT_EMBEDDER: Final = "default"
"""The word that selects :func:`default_embedder` wherever an embedder is configured."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one fixed dimension, many texts per call.

    ``name`` identifies the model (and anything that changes its vectors, such as a
    version); ``dimension`` is the length of every vector ``embed`` returns.
    """

    @property
    def name(self) -> str:
        """The model's identity, recorded in the store beside its vectors."""
        ...

    @property
    def dimension(self) -> int:
        """The length of every vector."""
        ...

    async def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One vector per text, in order."""
        ...


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An :class:`Embedder` that embeds search queries differently from what is stored
    (asymmetric models such as e5, which prefix ``"query: "`` and ``"passage: "``).
    A store uses ``embed_queries`` for query text and ``embed`` for records."""

    async def embed_queries(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One query vector per text, in order."""
        ...


@runtime_checkable
class InProcessEmbedder(Embedder, Protocol):
    """An :class:`Embedder` whose model runs in this process and can also embed in the
    calling thread. A store then embeds a search's query by ``embed_now(texts,
    queries=True)`` in a worker thread of its own, which the search waits for directly:
    no hop through the event loop on the search's critical path. Records are still
    embedded by the async ``embed``. ``embed_now`` is called from several threads at
    once when searches overlap. :func:`default_embedder` is one."""

    def embed_now(
        self, texts: Sequence[str], *, queries: bool = False
    ) -> Sequence[Sequence[float]]:
        """One vector per text, in order, made in the calling thread; ``queries``: the
        texts are search queries (as ``embed_queries`` takes them)."""
        ...


def check_embedder(embedder: object) -> Embedder:
    """``embedder`` if it has a non-empty ``name``, a positive ``dimension`` and an
    async ``embed``; :class:`ConfigurationError` naming what is wrong otherwise."""
    name = getattr(embedder, "name", None)
    dimension = getattr(embedder, "dimension", None)
    embed = getattr(embedder, "embed", None)
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(f"an embedder needs a non-empty name, got {name!r}")
    if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension <= 0:
        raise ConfigurationError(
            f"embedder {name!r} needs a positive int dimension, got {dimension!r}"
        )
    if not inspect.iscoroutinefunction(embed):
        raise ConfigurationError(
            f"embedder {name!r} needs an async embed(texts) method, got {embed!r}"
        )
    assert isinstance(embedder, Embedder)  # what the checks above established
    return embedder


_default_lock = threading.Lock()
_default: list[Embedder] = []


def default_embedder() -> Embedder:
    """recallstore's default embedder: all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions),
    loaded from installed packages with no network and no torch; one per process.

    Needs the ``semantic`` extra: :class:`~recallstore.errors.MissingDependencyError`
    with ``pip install 'recallstore[semantic]'`` otherwise. The model itself is loaded
    on the first ``embed`` call, in a worker thread.
    """
    with _default_lock:
        if not _default:
            from recallstore._default_embedder import DefaultEmbedder

            _default.append(DefaultEmbedder())
        return _default[0]


def resolve_embedder(spec: Embedder | str | None) -> Embedder | None:
    """What an ``embedder=`` setting means: None (keyword search), ``"default"``
    (:func:`default_embedder`), ``"module:factory"`` (:func:`load_embedder`) or an
    embedder (checked by :func:`check_embedder`)."""
    if spec is None:
        return None
    if isinstance(spec, str):
        return load_embedder(spec)
    return check_embedder(spec)


def load_embedder(spec: str) -> Embedder:
    """The embedder ``spec`` names: ``"default"`` for :func:`default_embedder`, or
    ``module:factory`` (``factory()`` is called with no argument), as the command line
    takes it (``--embedder``)."""
    if spec.strip() == DEFAULT_EMBEDDER:
        return default_embedder()
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigurationError(
            f"embedder {spec!r}: expected {DEFAULT_EMBEDDER!r} or 'module:factory', "
            "e.g. 'myapp.models:make_embedder'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(
            f"embedder {spec!r}: cannot import {module_name!r}: {exc}"
        ) from exc
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ConfigurationError(f"embedder {spec!r}: {module_name} has no callable {attribute!r}")
    return check_embedder(factory())
