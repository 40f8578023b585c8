"""``load_memory_store``: turn a configured target (a path or URL) into a store.

The target's URL scheme picks the backend from the registry
(:mod:`recallstore.backends.registry`); a plain path goes to the default scheme's
backend, SQLite. A configured target that cannot be used is an error, never a silent
fall-back to the in-memory store: memory that quietly vanishes at exit is worse than
a crash.
"""

from __future__ import annotations

import os

from recallstore.backends.registry import DEFAULT_SCHEME, open_target, scheme_of
from recallstore.embedding import Embedder
from recallstore.errors import ConfigurationError
from recallstore.store import MemoryStore

__all__ = ["load_memory_store"]


def load_memory_store(
    target: str | os.PathLike[str],
    *,
    embedder: Embedder | str | None = None,
    read_only: bool = False,
) -> MemoryStore:
    """An unopened store for ``target``; enter it with ``async with``.

    * ``"memory:"`` → :class:`~recallstore.backends.memory.InMemoryMemoryStore`
    * a filesystem path, ``"sqlite:///relative/path.db"`` or
      ``"sqlite:////absolute/path.db"`` → :class:`~recallstore.backends.sqlite.SqliteMemoryStore`
    * ``"postgresql://…"`` → :class:`~recallstore.backends.postgres.PostgresMemoryStore`
      (schema ``recallstore``; needs the ``postgres`` extra)
    * any other scheme → the backend registered for it (see docs/backends.md)

    An unknown or unsupported scheme raises :class:`~recallstore.errors.ConfigurationError`
    here; a target that cannot be opened raises
    :class:`~recallstore.errors.StoreUnavailableError` when the store is entered.

    ``embedder`` makes its search hybrid (docs/hybrid-search.md): ``"default"`` for
    recallstore's own model (the ``semantic`` extra), ``"module:factory"``, or an
    :class:`~recallstore.embedding.Embedder`. A backend without hybrid search given
    one raises :class:`~recallstore.errors.ConfigurationError`.

    ``read_only=True`` gives a store to look at (the command line's reads): it journals
    none of its own searches, and SQLite opens the file without writing to it, even one
    it cannot write (``recallstore.backends.sqlite.read_only``); its writes raise
    :class:`~recallstore.errors.StoreUnavailableError`. A backend with no such opening
    (one not built on ``BaseMemoryStore``) is opened as it is.
    """
    return _looking(_loaded(target, embedder), read_only)


def _loaded(target: str | os.PathLike[str], embedder: Embedder | str | None) -> MemoryStore:
    if isinstance(target, os.PathLike):
        return _with_embedder(open_target(DEFAULT_SCHEME, os.fspath(target)), embedder)
    if not isinstance(target, str):
        raise ConfigurationError(
            f"a memory store target must be a path or URL string, got {type(target).__name__}"
        )
    text = target.strip()
    if not text:
        raise ConfigurationError("the memory store target is empty; use a path or 'memory:'")
    return _with_embedder(open_target(scheme_of(text) or DEFAULT_SCHEME, text), embedder)


def _looking(store: MemoryStore, read_only: bool) -> MemoryStore:
    if read_only:
        from recallstore.backends.base import BaseMemoryStore

        if isinstance(store, BaseMemoryStore):
            store._look_only()
    return store


def _with_embedder(store: MemoryStore, embedder: Embedder | str | None) -> MemoryStore:
    if embedder is None:
        return store
    # Here, not at the top: `import recallstore` imports no backend machinery.
    from recallstore.backends._hybrid import HybridSearch

    if not isinstance(store, HybridSearch):
        raise ConfigurationError(
            f"{type(store).__name__} has no hybrid search, so it cannot take an embedder "
            f"({embedder!r})"
        )
    store._init_hybrid(embedder)  # the store is not open yet: as if given to its constructor
    return store
