"""Where a batch write's time goes, beside the same work done by hand in one process.

Batch by batch (1,000 records each, up to ``--records``), the same inputs go through
``SqliteMemoryStore.write`` and through a plain ``sqlite3`` connection to a file of the
same schema, in turn, so machine noise hits both alike. The by-hand floor is split into
its phases: building the records (the benchmark's, validated: not timed in the floor),
``BEGIN`` and the rows (``PendingInsert``), the statements, and ``COMMIT`` (the log
written and synced). The store does all of that too, plus the records it returns; it
builds those while its ``COMMIT`` syncs the log, so the difference between the two
totals is what the store's own work still adds. Garbage collection during the store's
calls is shown apart (``gc.callbacks``). ``--keep-inputs`` keeps every batch's inputs
alive, as an application holding its data would: a larger heap makes each full
collection dearer, and the records' share of the write with it.

COMMIT's time (the log's fsync) varies several-fold from batch to batch on a shared
machine: alternate runs of two trees several times before reading a difference.

    .venv/bin/python benchmarks/write_phases.py [--records 100000] [--keep-inputs]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from store_bench import PRAGMAS, Corpus, build_rows

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.insert import PendingInsert, insert_now
from recallstore.records import MemoryWriteInput
from recallstore.store import MonotonicClock

BATCH = 1000


class GcTimer:
    """Seconds spent in garbage collection while :attr:`on` is True."""

    def __init__(self) -> None:
        self.on = False
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self.on:
            self.seconds += time.perf_counter() - self._started


async def run(records: int, folder: Path, keep_inputs: bool) -> dict[str, float]:
    corpus = Corpus(users=max(records // 100, 1))
    floor_path, store_path = folder / "floor.db", folder / "store.db"
    async with SqliteMemoryStore(floor_path, sqlite_driver="stdlib"):
        pass  # the schema
    floor = sqlite3.connect(floor_path, isolation_level=None)
    for pragma in PRAGMAS:
        floor.execute(pragma)
    clock = MonotonicClock()
    spent = dict.fromkeys(["store", "rows", "statements", "commit", "records"], 0.0)
    kept: list[list[MemoryWriteInput]] = []  # with --keep-inputs
    collecting = GcTimer()
    gc.callbacks.append(collecting)
    try:
        async with SqliteMemoryStore(store_path, journal=None, sqlite_driver="stdlib") as store:
            for _ in range(records // BATCH):
                chunk = corpus.inputs(BATCH)
                if keep_inputs:
                    kept.append(chunk)
                collecting.on = True
                started = time.perf_counter()
                await store.write(chunk)
                spent["store"] += time.perf_counter() - started
                collecting.on = False
                started = time.perf_counter()
                built = build_rows(chunk, clock)
                begun = time.perf_counter()
                floor.execute("BEGIN IMMEDIATE")
                floor.execute("SELECT max(created_at) FROM memory_records").fetchall()
                pending = PendingInsert(built)
                ready = time.perf_counter()
                insert_now(floor, pending)
                inserted = time.perf_counter()
                floor.execute("COMMIT")
                committed = time.perf_counter()
                spent["records"] += begun - started
                spent["rows"] += ready - begun
                spent["statements"] += inserted - ready
                spent["commit"] += committed - inserted
    finally:
        gc.callbacks.remove(collecting)
        floor.close()
    spent["gc"] = collecting.seconds
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--keep-inputs", action="store_true", help="a larger live heap")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        spent = asyncio.run(run(args.records, Path(folder), args.keep_inputs))
    per = {name: seconds / args.records * 1e6 for name, seconds in spent.items()}
    floor = per["rows"] + per["statements"] + per["commit"]
    heap = ", every batch's inputs kept alive" if args.keep_inputs else ""
    print(f"\n{args.records:,} records, {BATCH:,} per write{heap}; µs per record")
    print(f"{'phase':<46}{'store':>8}{'by hand':>9}")
    print(f"{'records built (validated; not in the floor)':<46}{'':>8}{per['records']:>9.2f}")
    print(f"{'BEGIN and the rows':<46}{'':>8}{per['rows']:>9.2f}")
    print(f"{'the statements':<46}{'':>8}{per['statements']:>9.2f}")
    print(f"{'COMMIT':<46}{'':>8}{per['commit']:>9.2f}")
    print(f"{'total (the floor: rows, statements, COMMIT)':<46}{per['store']:>8.2f}{floor:>9.2f}")
    print(f"{'  of which garbage collection':<46}{per['gc']:>8.2f}")
    print(f"store / floor: {per['store'] / floor:.2f}×")


if __name__ == "__main__":
    main()
