"""The ``recallstore`` command line: demo, serve, inspect, correct and move memory.

Entry point: :func:`main` (console script ``recallstore``, also ``python -m recallstore``).
Built on argparse, so the command needs no dependency beyond the core package.
"""

from recallstore.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
