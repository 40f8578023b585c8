"""``recallstore reembed``: switch a store's hybrid search to another embedding model."""

from __future__ import annotations

import argparse
import asyncio
import sys

from recallstore._command.database import open_store
from recallstore._command.errors import CliError
from recallstore.backends._hybrid import HybridSearch
from recallstore.cli._output import count_records
from recallstore.cli._progress import ProgressBar
from recallstore.embedding import load_embedder


def run_reembed(args: argparse.Namespace) -> int:
    """Embed every record with ``--embedder`` and make it the store's embedder."""
    embedder = load_embedder(args.embedder)
    store = open_store(args.db, must_exist=True)
    if not isinstance(store, HybridSearch):
        raise CliError(f"{type(store).__name__} keeps no vectors, so it cannot re-embed")
    bar = ProgressBar("embedding", total=None, enabled=ProgressBar.wanted(args.progress))

    async def go() -> int:
        async with store:
            return await store.reembed(embedder, batch=args.batch_size, progress=bar.update)

    try:
        count = asyncio.run(go())
    finally:
        bar.close()
    print(
        f"embedded {count_records(count)} with {embedder.name!r} (dimension "
        f"{embedder.dimension}); open the store with that embedder from now on",
        file=sys.stderr,
    )
    return 0
