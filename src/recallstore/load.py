"""``load_memory_store``: turn a configured target (a path or URL) into a store.

A configured target that cannot be used is an error, never a silent fall-back to
the in-memory store: memory that quietly vanishes at exit is worse than a crash.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.errors import ConfigurationError
from recallstore.store import MemoryStore

__all__ = ["load_memory_store"]

MEMORY_TARGET = "memory:"
# "name:" with a name of two or more characters is a scheme; "C:" stays a drive letter.
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]+):")
_SQLITE_PREFIX = "sqlite://"


def load_memory_store(target: str | os.PathLike[str]) -> MemoryStore:
    """An unopened store for ``target``; enter it with ``async with``.

    * ``"memory:"`` → :class:`~recallstore.backends.memory.InMemoryMemoryStore`
    * a filesystem path, ``"sqlite:///relative/path.db"`` or
      ``"sqlite:////absolute/path.db"`` → :class:`~recallstore.backends.sqlite.SqliteMemoryStore`
    * ``"postgresql://…"`` → :class:`~recallstore.backends.postgres.PostgresMemoryStore`
      (schema ``recallstore``; needs the ``postgres`` extra)

    An unknown or unsupported scheme raises :class:`~recallstore.errors.ConfigurationError`
    here; a target that cannot be opened raises
    :class:`~recallstore.errors.StoreUnavailableError` when the store is entered.
    """
    if isinstance(target, os.PathLike):
        return SqliteMemoryStore(Path(target))
    if not isinstance(target, str):
        raise ConfigurationError(
            f"a memory store target must be a path or URL string, got {type(target).__name__}"
        )
    text = target.strip()
    if not text:
        raise ConfigurationError("the memory store target is empty; use a path or 'memory:'")
    if text == MEMORY_TARGET:
        return InMemoryMemoryStore()
    if text == ":memory:":
        raise ConfigurationError(
            "memory store target ':memory:' is ambiguous; use 'memory:' for the in-memory "
            "store or a file path for SQLite"
        )
    match = _SCHEME.match(text)
    if match is None:
        return SqliteMemoryStore(Path(text))
    scheme = match["scheme"].lower()
    if scheme == "sqlite":
        return SqliteMemoryStore(_sqlite_url_path(text))
    if scheme in {"postgres", "postgresql"}:
        return PostgresMemoryStore(text)
    raise ConfigurationError(
        f"memory store target {target!r} has an unknown scheme {match['scheme']!r}; "
        "use a path, 'sqlite:///path.db', 'postgresql://…' or 'memory:'"
    )


def _sqlite_url_path(url: str) -> Path:
    """The file path of ``sqlite:///relative`` or ``sqlite:////absolute``."""
    if not url.lower().startswith(_SQLITE_PREFIX):
        raise ConfigurationError(
            f"memory store target {url!r}: a SQLite URL is 'sqlite:///relative/path.db' "
            "or 'sqlite:////absolute/path.db'"
        )
    rest = url[len(_SQLITE_PREFIX) :]
    host, slash, path = rest.partition("/")
    if host or not slash:
        raise ConfigurationError(
            f"memory store target {url!r}: a SQLite URL has no host; "
            "use 'sqlite:///relative/path.db' or 'sqlite:////absolute/path.db'"
        )
    if "?" in path or "#" in path:
        raise ConfigurationError(
            f"memory store target {url!r}: SQLite URL options are not supported"
        )
    path = unquote(path)
    if not path or path == ":memory:":
        raise ConfigurationError(
            f"memory store target {url!r} names no database file; "
            "for a non-durable store use 'memory:'"
        )
    return Path(path)
