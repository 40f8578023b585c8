"""Which SQLite library the SQLite backend runs on: the standard ``sqlite3`` or a current one.

The standard library's SQLite is whatever the Python build linked (3.40 on Debian 12,
older elsewhere). FTS5's ``secure-delete`` option — a delete removes the words from the
index pages at once, instead of leaving them until the index is merged — needs 3.42.
The ``sqlite`` extra (``pip install 'recallstore[sqlite]'``) brings a current SQLite as
its own DB-API module (``pysqlite3`` on Linux x86-64, ``sqlean`` elsewhere); aiosqlite
runs it through its connector argument.

How the driver is chosen, first match wins:

1. ``SqliteMemoryStore(path, sqlite_driver=...)``: ``"auto"``, ``"stdlib"``,
   ``"pysqlite3"`` or ``"sqlean"``;
2. the ``RECALLSTORE_SQLITE_DRIVER`` environment variable, same values (for the CLI
   and the dashboard, which open stores from a path);
3. ``"auto"``: the first of ``pysqlite3`` and ``sqlean`` that is installed and has
   SQLite 3.42+, else the standard ``sqlite3``.

Naming a driver that is not installed raises
:class:`~recallstore.errors.MissingDependencyError` with the install command. Every
backend module that catches database errors takes the error class from the driver in
use (``SqliteDriver.error``): each module has exception classes of its own, and a
``pysqlite3`` error is no ``sqlite3.Error``.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import aiosqlite

from recallstore.backends.sqlite.left_open import TrackedConnection
from recallstore.errors import ConfigurationError, MissingDependencyError, install_hint

__all__ = [
    "DRIVER_ENV",
    "DRIVER_NAMES",
    "INSTALL_COMMAND",
    "SECURE_DELETE_SINCE",
    "SqliteDriver",
    "choose_sqlite",
]

DRIVER_ENV: Final = "RECALLSTORE_SQLITE_DRIVER"
"""Environment variable naming the driver when the store is not given one."""
SECURE_DELETE_SINCE: Final = (3, 42, 0)
"""The first SQLite whose FTS5 has ``secure-delete`` (and reads indexes that used it)."""
INSTALL_COMMAND: Final = install_hint("sqlite")
"""What brings a SQLite with ``secure-delete``."""

# Driver name -> its DB-API module; "auto" tries the modules in this order.
_MODULES: Final[dict[str, str]] = {"pysqlite3": "pysqlite3.dbapi2", "sqlean": "sqlean.dbapi2"}
DRIVER_NAMES: Final = ("auto", "stdlib", *_MODULES)
"""The values ``sqlite_driver=`` and ``RECALLSTORE_SQLITE_DRIVER`` take."""


@dataclass(frozen=True)
class SqliteDriver:
    """One DB-API SQLite module: its name, its SQLite version and its error classes."""

    name: str
    module: ModuleType

    @property
    def version(self) -> tuple[int, ...]:
        """The SQLite library version, e.g. ``(3, 51, 1)``."""
        return tuple(int(part) for part in str(self.module.sqlite_version).split("."))

    @property
    def version_text(self) -> str:
        """The SQLite library version as SQLite prints it."""
        return str(self.module.sqlite_version)

    @property
    def secure_delete(self) -> bool:
        """True when its FTS5 has ``secure-delete`` (SQLite 3.42+)."""
        return self.version >= SECURE_DELETE_SINCE

    @property
    def error(self) -> type[Exception]:
        """The module's ``Error``: the base of every database error it raises."""
        error: type[Exception] = self.module.Error
        return error

    @property
    def operational_error(self) -> type[Exception]:
        """The module's ``OperationalError`` (locked, busy, I/O, SQL errors)."""
        error: type[Exception] = self.module.OperationalError
        return error

    def connect(self, database: str | Path, **kwargs: Any) -> aiosqlite.Connection:
        """An aiosqlite connection over this module (await it, or use ``async with``),
        closed at exit if the program leaves it open (:mod:`.left_open`)."""
        location = str(database)
        module = self.module

        def connector() -> sqlite3.Connection:
            connection: sqlite3.Connection = module.connect(location, **kwargs)
            return connection

        return TrackedConnection(connector, location)


STDLIB: Final = SqliteDriver("stdlib", sqlite3)
"""The standard library's ``sqlite3``."""


def choose_sqlite(requested: str | None = None) -> SqliteDriver:
    """The driver for ``requested`` (None: ``$RECALLSTORE_SQLITE_DRIVER``, else ``"auto"``)."""
    name = requested if requested is not None else os.environ.get(DRIVER_ENV) or "auto"
    if name not in DRIVER_NAMES:
        source = "sqlite_driver" if requested is not None else DRIVER_ENV
        raise ConfigurationError(
            f"{source} {name!r} is not a SQLite driver; use one of {', '.join(DRIVER_NAMES)}"
        )
    if name == "stdlib":
        return STDLIB
    if name != "auto":
        module = _load(_MODULES[name])
        if module is None:
            raise MissingDependencyError(f"the {name} SQLite driver", "sqlite")
        return SqliteDriver(name, module)
    for candidate, module_name in _MODULES.items():
        module = _load(module_name)
        if module is not None:
            driver = SqliteDriver(candidate, module)
            if driver.secure_delete:
                return driver
    return STDLIB


def _load(module_name: str) -> ModuleType | None:
    try:
        return importlib.import_module(module_name)
    except ImportError:
        return None
