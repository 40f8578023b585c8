"""The ``Embedder`` protocol: what a store needs to search by meaning as well as by words.

An embedder is the user's: their provider's embeddings, a local model. It is async and
batched (one call embeds a whole write batch), and it names itself and its dimension;
a store records both beside the vectors it writes, so a store is never searched with
vectors of two models (see docs/hybrid-search.md). Nothing here imports a model or
numpy: the stores do, and only when they are given an embedder (the ``hybrid`` extra).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from recallstore.errors import ConfigurationError

__all__ = ["Embedder", "QueryEmbedder", "check_embedder", "load_embedder"]


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


def load_embedder(spec: str) -> Embedder:
    """The embedder ``module:factory`` builds (``factory()`` is called with no argument),
    as the command line takes it (``recallstore reembed --embedder``)."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigurationError(
            f"embedder {spec!r}: expected 'module:factory', e.g. 'myapp.models:make_embedder'"
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
