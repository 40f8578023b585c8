"""``recallstore demo``: two scripted conversations with memory on a SQLite file."""

from __future__ import annotations

import argparse
import asyncio

from recallstore._command.database import make_parent_directory, open_store, store_file
from recallstore._command.errors import EXIT_USAGE, CliError


def run_demo_command(args: argparse.Namespace) -> int:
    """``recallstore demo``: two scripted conversations on a SQLite file."""
    store = open_store(args.db, must_exist=False)
    path = store_file(store)
    if path is None:
        raise CliError(
            f"demo needs a database file (a path or sqlite:/// URL), got {args.db!r}", EXIT_USAGE
        )
    from recallstore.demo import run_demo

    make_parent_directory(store)
    asyncio.run(run_demo(path))
    return 0
