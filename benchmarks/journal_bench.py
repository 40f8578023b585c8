"""The event journal's cost: search latency and write throughput with it on and off,
and retention holding the journal at its bound over a long run.

Two SQLite files are loaded with the same records, one store journaling (the
default) and one opened with ``journal=None``. Calls alternate between the two in
small rounds, so the machine's noise falls on both alike. Measured:

* search p50 (query text within a user's scope): a journaled search only queues its
  event in memory; the background flusher writes queued events every 0.25 s;
* single-write throughput (one record per ``write()``, each its own fsync'd
  transaction), the median of per-round rates: a journaled write adds one row (and
  prunes one, by trigger) in the same transaction;
* retention: ``--retention-writes`` single writes (``synchronous=NORMAL``, to keep the
  run short) against ``max_events=--bound``; the row count is checked every
  ``--bound`` writes and must never exceed the bound.

    .venv/bin/python benchmarks/journal_bench.py [--records 20000] [--searches 400]
        [--writes 600] [--retention-writes 100000] [--bound 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from store_bench import Corpus

from recallstore.backends._tuning import tune
from recallstore.backends.journal import JournalSettings
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput

ROUND = 20
"""Calls made on one store before switching to the other."""


def _users(records: int) -> int:
    # About a hundred memories a user, as in the store benchmark.
    return max(records // 100, 1)


async def _load(store: SqliteMemoryStore, records: int) -> None:
    corpus = Corpus(_users(records), seed=7)
    for start in range(0, records, 1000):
        await store.write(corpus.inputs(min(1000, records - start)))


async def compare(records: int, searches: int, writes: int) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="journal-bench-"))
    on = SqliteMemoryStore(folder / "on.db", sqlite_driver="stdlib")
    off = SqliteMemoryStore(folder / "off.db", journal=None, sqlite_driver="stdlib")
    async with on, off:
        await asyncio.gather(_load(on, records), _load(off, records))
        corpus = Corpus(_users(records), seed=11)
        queries = [
            MemorySearchQuery(query=corpus.query(), scope=corpus.scope()) for _ in range(searches)
        ]
        latency: dict[str, list[float]] = {"on": [], "off": []}
        for start in range(0, searches, ROUND):
            for name, store in (("on", on), ("off", off))[:: 1 if start % 40 else -1]:
                for query in queries[start : start + ROUND]:
                    began = time.perf_counter()
                    await store.search(query)
                    latency[name].append(time.perf_counter() - began)
        # Per-round rates, and their medians: a burst of load from elsewhere on the
        # machine spoils one round, not the figure.
        rates: dict[str, list[float]] = {"on": [], "off": []}
        inputs = corpus.inputs(writes)
        for start in range(0, writes, ROUND):
            for name, store in (("on", on), ("off", off))[:: 1 if start % 40 else -1]:
                chunk = inputs[start : start + ROUND]
                began = time.perf_counter()
                for item in chunk:
                    await store.write([item])
                rates[name].append(len(chunk) / (time.perf_counter() - began))
    return {
        "search_p50_on_ms": statistics.median(latency["on"]) * 1000,
        "search_p50_off_ms": statistics.median(latency["off"]) * 1000,
        "writes_per_s_on": statistics.median(rates["on"]),
        "writes_per_s_off": statistics.median(rates["off"]),
    }


async def retention(writes: int, bound: int) -> tuple[int, float]:
    """The largest row count seen, and the run's seconds."""
    folder = Path(tempfile.mkdtemp(prefix="journal-retention-"))
    db = folder / "memory.db"
    settings = JournalSettings(max_events=bound)
    largest = 0
    began = time.perf_counter()
    # stdlib, like the sqlite3 connection that reads the file beside it.
    shipped = SqliteMemoryStore(db, journal=settings, sqlite_driver="stdlib")
    async with tune(shipped, synchronous="NORMAL") as store:
        for n in range(1, writes + 1):
            await store.write([MemoryWriteInput(scope={"user": "u"}, content=f"fact {n}")])
            if n % bound == 0 or n == writes:
                with sqlite3.connect(db) as conn:
                    (count,) = conn.execute("SELECT count(*) FROM memory_journal").fetchone()
                conn.close()
                largest = max(largest, int(count))
    return largest, time.perf_counter() - began


def report_costs(figures: dict[str, float], args: argparse.Namespace) -> bool:
    """Print the on/off table; True when within the targets."""
    search_ratio = figures["search_p50_on_ms"] / figures["search_p50_off_ms"]
    write_ratio = figures["writes_per_s_on"] / figures["writes_per_s_off"]
    print(f"records {args.records}, searches {args.searches}, single writes {args.writes}")
    print("| measure | journal on | journal off | on / off |")
    print("|---|---|---|---|")
    print(
        f"| search p50 (ms) | {figures['search_p50_on_ms']:.3f} | "
        f"{figures['search_p50_off_ms']:.3f} | {search_ratio:.3f} |"
    )
    print(
        f"| single writes per second (median of rounds) | {figures['writes_per_s_on']:.0f} | "
        f"{figures['writes_per_s_off']:.0f} | {write_ratio:.3f} |"
    )
    return search_ratio <= 1.10 and write_ratio >= 0.85


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--searches", type=int, default=400)
    parser.add_argument("--writes", type=int, default=600)
    parser.add_argument("--retention-writes", type=int, default=100_000)
    parser.add_argument("--bound", type=int, default=10_000)
    args = parser.parse_args(argv)
    ok = True
    if args.searches > 0 and args.writes > 0:  # 0 runs the retention part alone
        ok = report_costs(asyncio.run(compare(args.records, args.searches, args.writes)), args)
    if args.retention_writes:
        largest, seconds = asyncio.run(retention(args.retention_writes, args.bound))
        print(
            f"retention: {args.retention_writes} writes, bound {args.bound}: "
            f"largest row count {largest} ({seconds:.0f} s)"
        )
        ok = ok and largest <= args.bound
    print("within the targets (search +10 %, writes -15 %, bound held):", ok)
    return 0


if __name__ == "__main__":
    sys.exit(main())
