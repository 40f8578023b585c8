"""Which database a command works on and which part of it: ``--db`` and ``--scope``."""

from __future__ import annotations

import os
from pathlib import Path

from recallstore._command.errors import EXIT_USAGE, CliError
from recallstore.backends.registry import describe_store
from recallstore.errors import MemoryValidationError
from recallstore.load import load_memory_store
from recallstore.scope_text import parse_scope_text
from recallstore.store import MemoryStore

DB_ENV = "RECALLSTORE_DB"
"""Environment variable naming the default database (a path or a store URL)."""
DEFAULT_DB = os.path.join(".recallstore", "memory.db")
"""The database used when neither ``--db`` nor ``RECALLSTORE_DB`` is given."""


def default_db() -> str:
    """``$RECALLSTORE_DB`` when set, else ``./.recallstore/memory.db``."""
    return os.environ.get(DB_ENV) or DEFAULT_DB


def store_file(store: MemoryStore) -> Path | None:
    """The database file behind ``store``, or None when it has none (``memory:``)."""
    return describe_store(store).path


def open_store(
    target: str, *, must_exist: bool, embedder: str | None = None, read_only: bool = False
) -> MemoryStore:
    """The UNOPENED store for ``target``; refuses a missing file when ``must_exist``.
    ``embedder`` is ``--embedder``: ``"default"`` or ``module:factory`` (hybrid search).
    ``read_only`` for a command that only looks (``list``, ``search``, ``show``,
    ``export``, ``events tail``): it leaves the file as it was, and reads one it cannot
    write (see ``load_memory_store``)."""
    store = load_memory_store(target, embedder=embedder, read_only=read_only)
    path = store_file(store)
    if path is not None:
        if path.is_dir():
            raise CliError(f"--db {str(path)!r} is a directory, not a memory database file")
        if must_exist and not path.exists():
            raise CliError(f"no memory database at {str(path)!r} (check --db or ${DB_ENV})")
        # SQLite takes an empty file for a new database and writes its schema into it:
        # a command that only reads must leave the file (whatever it is) as it found it.
        if must_exist and path.is_file() and path.stat().st_size == 0:
            raise CliError(
                f"{str(path)!r} is an empty file (0 bytes), not a memory database "
                f"(check --db or ${DB_ENV})"
            )
    return store


def make_parent_directory(store: MemoryStore) -> None:
    """Create the folder of ``store``'s file, so a first run can create the database."""
    path = store_file(store)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)


def parse_scope(values: list[str] | None) -> dict[str, str]:
    """``["tenant=acme", "user=u1"]`` → ``{"tenant": "acme", "user": "u1"}``, validated.

    One value may hold several pairs, as ``list`` prints them (``tenant=acme, user=u1``
    or ``tenant=acme,user=u1``); spaces around keys and values are dropped. A pair with
    an empty value (``user=``) is refused: it would match only records whose value is
    empty, which is never what was meant.
    """
    try:
        scope = parse_scope_text(values or [])
    except MemoryValidationError as exc:
        raise CliError(f"--scope {exc.message}", EXIT_USAGE) from None
    empty = [key for key, value in scope.items() if not value]
    if empty:
        # The wording `recallstore mcp` has always used for its own scope.
        raise CliError(f"--scope {empty[0]!r} needs a non-empty value", EXIT_USAGE)
    return scope
