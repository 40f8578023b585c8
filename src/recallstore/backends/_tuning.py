"""Knobs for the benchmarks and trials, kept out of the stores' constructors.

Not public API: a benchmark compares a store with one of these changed against the
same store as shipped. Each is set on a store before it opens.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from recallstore._search.fusion import FusionMethod
from recallstore.backends._hybrid import HybridSearch
from recallstore.backends.sqlite import schema
from recallstore.backends.sqlite.store import SqliteMemoryStore

__all__ = ["tune"]

_S = TypeVar("_S", bound="HybridSearch[Any]")


def tune(
    store: _S,
    *,
    fusion: tuple[FusionMethod, float] | None = None,
    tokenizer: Literal["porter", "unicode61"] | None = None,
    synchronous: Literal["FULL", "NORMAL"] | None = None,
) -> _S:
    """``store`` with the given knobs changed: ``fusion`` (method and vector weight, any
    hybrid store), ``tokenizer`` (SQLite, applies when the file is created) and
    ``synchronous`` (SQLite's ``PRAGMA synchronous``, for FULL-versus-NORMAL runs)."""
    if fusion is not None:
        store._fusion = fusion
    if tokenizer is None and synchronous is None:
        return store
    if not isinstance(store, SqliteMemoryStore):
        raise TypeError(f"tokenizer and synchronous are SQLite knobs, not {type(store).__name__}'s")
    if tokenizer is not None:
        if tokenizer not in schema.TOKENIZERS:
            raise ValueError(f"unknown tokenizer {tokenizer!r}")
        store._tokenizer = tokenizer
    if synchronous is not None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"unknown synchronous mode {synchronous!r}")
        store._synchronous = synchronous
    return store
