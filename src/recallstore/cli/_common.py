"""What every command shares: the error type, ``--db`` and ``--scope``, progress, output."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import TextIO

from recallstore.backends.registry import describe_store
from recallstore.errors import MemoryValidationError
from recallstore.load import load_memory_store
from recallstore.records import MemoryRecord, parse_scope_pairs
from recallstore.store import MemoryStore, utc_now

DB_ENV = "RECALLSTORE_DB"
"""Environment variable naming the default database (a path or a store URL)."""
DEFAULT_DB = os.path.join(".recallstore", "memory.db")
"""The database used when neither ``--db`` nor ``RECALLSTORE_DB`` is given."""

EXIT_FAILED = 1
"""The operation failed (missing database, unknown id, incompatible file...)."""
EXIT_USAGE = 2
"""The command line itself was wrong (unknown option, bad ``--scope`` syntax...)."""
EXIT_INTERRUPTED = 130
"""Stopped with Ctrl+C (the shell's convention: 128 + SIGINT)."""


class CliError(Exception):
    """A user mistake or a failed operation: printed as one line, never a traceback."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED, *, prog: str = "recallstore"):
        self.message = message
        self.exit_code = exit_code
        self.prog = prog
        super().__init__(message)


def default_db() -> str:
    """``$RECALLSTORE_DB`` when set, else ``./.recallstore/memory.db``."""
    return os.environ.get(DB_ENV) or DEFAULT_DB


def store_file(store: MemoryStore) -> Path | None:
    """The database file behind ``store``, or None when it has none (``memory:``)."""
    return describe_store(store).path


def open_store(target: str, *, must_exist: bool) -> MemoryStore:
    """The UNOPENED store for ``target``; refuses a missing file when ``must_exist``."""
    store = load_memory_store(target)
    path = store_file(store)
    if path is not None:
        if path.is_dir():
            raise CliError(f"--db {str(path)!r} is a directory, not a memory database file")
        if must_exist and not path.exists():
            raise CliError(f"no memory database at {str(path)!r} (check --db or ${DB_ENV})")
    return store


def make_parent_directory(store: MemoryStore) -> None:
    """Create the folder of ``store``'s file, so a first run can create the database."""
    path = store_file(store)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)


def parse_scope(values: list[str] | None) -> dict[str, str]:
    """``["tenant=acme", "user=u1"]`` → ``{"tenant": "acme", "user": "u1"}``, validated."""
    try:
        return parse_scope_pairs(values or [])
    except MemoryValidationError as exc:
        raise CliError(f"--scope {exc.message}", EXIT_USAGE) from None


def format_scope(scope: dict[str, str]) -> str:
    """``{"tenant": "acme"}`` → ``tenant=acme`` (``-`` when empty)."""
    return " ".join(f"{key}={value}" for key, value in scope.items()) or "-"


def status_of(record: MemoryRecord) -> str:
    """``valid``, ``superseded``, ``invalidated`` or ``expired``, as a list column shows it."""
    return record.status(utc_now())


def short_time(record: MemoryRecord) -> str:
    """The creation time to the second, as ``2026-11-29 19:04:05``."""
    return record.created_at.strftime("%Y-%m-%d %H:%M:%S")


# C0 controls but tab and newline, DEL and C1: in a terminal they are commands (clear
# the screen, set the title, hide text), and memory text comes from a model.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with terminal control characters shown as ``\\x1b``-style escapes."""
    return _CONTROL_CHARACTERS.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def one_line(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class ProgressBar:
    """A dependency-free progress bar on stderr; silent unless enabled.

    With a known ``total`` it draws ``label [####......]  40%  400/1000``; without one
    it counts records. Redraws at most ten times a second.
    """

    _WIDTH = 30

    def __init__(
        self, label: str, *, total: int | None, enabled: bool, stream: TextIO | None = None
    ) -> None:
        self._label = label
        self._total = total
        self._enabled = enabled
        self._stream = stream or sys.stderr
        self._last_draw = 0.0
        self._done = 0

    @staticmethod
    def wanted(forced: bool) -> bool:
        """Draw when ``--progress`` was given or stderr is a terminal."""
        return forced or sys.stderr.isatty()

    def update(self, done: int) -> None:
        """Record progress; redraw when enough time has passed."""
        self._done = done
        now = time.monotonic()
        if self._enabled and now - self._last_draw >= 0.1:
            self._last_draw = now
            self._draw()

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self._enabled:
            self._draw()
            self._stream.write("\n")
            self._stream.flush()

    def _draw(self) -> None:
        if self._total:
            filled = self._WIDTH * self._done // self._total
            bar = "#" * filled + "." * (self._WIDTH - filled)
            percent = 100 * self._done // self._total
            text = f"{self._label} [{bar}] {percent:3d}%  {self._done}/{self._total}"
        else:
            text = f"{self._label} {self._done} record{'' if self._done == 1 else 's'}"
        self._stream.write("\r" + text)
        self._stream.flush()
