"""How a command fails: one line on stderr and an exit code, never a traceback."""

from __future__ import annotations

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_USAGE", "CliError"]

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
