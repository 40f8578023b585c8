"""User-scoped listing p50 through SqliteMemoryStore on an existing file: wall and CPU.

The same listings as search_bench.py's "user-scoped listing" (its queries for seed 2,
3 and 4, after seed 1's as a warm-up), timed in wall-clock and process CPU time: on
a shared machine the CPU figure moves less with other work than the wall figure.
Run it alternately from two checkouts on the same file to compare them side by side
(the listing path writes nothing but the event journal's rows):

    nice .venv/bin/python benchmarks/listing_cost.py /tmp/h3-1m.db --users 10000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from search_bench import make_queries

import recallstore
from recallstore.backends.journal import DEFAULT_JOURNAL
from recallstore.backends.sqlite import SqliteMemoryStore


async def run(args: argparse.Namespace) -> None:
    journal = None if args.no_journal else DEFAULT_JOURNAL
    async with SqliteMemoryStore(Path(args.path), journal=journal) as store:
        for query in make_queries(args.users, args.queries, seed=1)["user-scoped listing"]:
            await store.search(query)
        rounds = []
        for seed in (2, 3, 4):
            wall, cpu = [], []
            for query in make_queries(args.users, args.queries, seed)["user-scoped listing"]:
                started, used = time.perf_counter(), time.process_time()
                await store.search(query)
                wall.append(time.perf_counter() - started)
                cpu.append(time.process_time() - used)
            rounds.append(
                f"{1000 * statistics.median(wall):.2f}/{1000 * statistics.median(cpu):.2f}"
            )
    source = Path(recallstore.__file__).parent.parent.parent.name
    journaled = "no journal" if args.no_journal else "journal"
    print(f"{source} ({journaled}) listing p50 ms wall/CPU, three rounds: {' '.join(rounds)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a file search_bench.py built (--reuse)")
    parser.add_argument("--users", type=int, required=True, help="as given to search_bench")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-journal", action="store_true")
    asyncio.run(run(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
