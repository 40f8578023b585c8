"""Store throughput and latency: SQLite next to the in-memory reference, in one run.

The machine is shared and noisy, so read the ratio columns rather than absolute
figures. Measured:

* single writes (one record per ``write()`` call, each one fsync'd transaction),
  SQLite with ``synchronous=FULL`` (the default) and ``NORMAL`` for comparison;
* batch writes of ``--batch`` records loading ``--records`` in total;
* search latency (query text, no scope), scoped search and a scoped listing;
* delete latency on the loaded store (SQLite merges its FTS5 index on every delete).

    .venv/bin/python benchmarks/store_bench.py [--records 100000] [--queries 20]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore

TENANTS = 10
USERS = 2_000


class Corpus:
    """Deterministic synthetic memories with a Zipf-like word distribution."""

    def __init__(self, seed: int = 7, vocabulary: int = 5_000) -> None:
        self._rng = random.Random(seed)
        syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zu", "pe", "dra", "gon"]
        words: set[str] = set()
        while len(words) < vocabulary:
            words.add("".join(self._rng.choice(syllables) for _ in range(self._rng.randint(2, 4))))
        self.words = sorted(words)
        self._cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(vocabulary)))

    def sentence(self, length: int = 12) -> str:
        return " ".join(self._rng.choices(self.words, cum_weights=self._cumulative, k=length))

    def scope(self) -> dict[str, str]:
        user = self._rng.randrange(USERS)
        return {"tenant": f"t{user % TENANTS}", "user": f"u{user}"}

    def inputs(self, count: int) -> list[MemoryWriteInput]:
        return [MemoryWriteInput(scope=self.scope(), content=self.sentence()) for _ in range(count)]

    def query(self) -> str:
        # Two mid-frequency words and one rare one, like a short user question.
        return " ".join(
            [self._rng.choice(self.words[20:500]) for _ in range(2)]
            + [self._rng.choice(self.words[500:])]
        )


async def timed(calls: list[Callable[[], Awaitable[object]]]) -> list[float]:
    """Seconds taken by each call, run one after another."""
    durations = []
    for call in calls:
        started = time.perf_counter()
        await call()
        durations.append(time.perf_counter() - started)
    return durations


def summary(durations: list[float]) -> tuple[float, float]:
    """(p50, p95) in milliseconds."""
    ordered = sorted(durations)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return 1000 * statistics.median(ordered), 1000 * p95


async def bench_store(
    store: MemoryStore, corpus_seed: int, records: int, batch: int, singles: int, queries: int
) -> dict[str, float]:
    corpus = Corpus(corpus_seed)
    figures: dict[str, float] = {}
    async with store:
        singles_inputs = corpus.inputs(singles)
        durations = await timed(
            [lambda inp=inp: store.write([inp]) for inp in singles_inputs]  # type: ignore[misc]
        )
        figures["single write/s"] = singles / sum(durations)
        # Inputs are built per batch (a million at once would not fit in memory) and
        # only the write calls are timed.
        writing = 0.0
        for offset in range(0, records - singles, batch):
            chunk = corpus.inputs(min(batch, records - singles - offset))
            started = time.perf_counter()
            await store.write(chunk)
            writing += time.perf_counter() - started
        figures["batch records/s"] = (records - singles) / writing
        texts = [corpus.query() for _ in range(queries)]
        scopes = [corpus.scope() for _ in range(queries)]
        plans = {
            "search": [MemorySearchQuery(query=t) for t in texts],
            "search tenant": [
                MemorySearchQuery(query=t, scope={"tenant": s["tenant"]})
                for t, s in zip(texts, scopes, strict=True)
            ],
            "search user": [
                MemorySearchQuery(query=t, scope=s) for t, s in zip(texts, scopes, strict=True)
            ],
            "list user": [MemorySearchQuery(scope=s) for s in scopes],
            "list tenant": [MemorySearchQuery(scope={"tenant": s["tenant"]}) for s in scopes],
        }
        for name, plan in plans.items():
            durations = await timed([lambda q=q: store.search(q) for q in plan])  # type: ignore[misc]
            figures[f"{name} p50 ms"], figures[f"{name} p95 ms"] = summary(durations)
        victims = [hit.record.id for hit in await store.search(MemorySearchQuery(limit=5))]
        durations = await timed([lambda v=v: store.delete(v) for v in victims])  # type: ignore[misc]
        figures["delete p50 ms"], _ = summary(durations)
    return figures


async def compare_synchronous(folder: Path, writes: int, rounds: int = 6) -> dict[str, float]:
    """Median milliseconds per single write for synchronous=FULL and NORMAL."""
    modes: tuple[Literal["FULL", "NORMAL"], ...] = ("FULL", "NORMAL")
    stores = {
        mode: SqliteMemoryStore(folder / f"{mode.lower()}.db", _synchronous=mode) for mode in modes
    }
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    corpus = Corpus(11)
    for store in stores.values():
        await store.open()
    try:
        for _ in range(rounds):
            for mode in modes:
                inputs = corpus.inputs(max(writes // rounds, 1))
                store = stores[mode]
                durations = await timed([lambda i=i, s=store: s.write([i]) for i in inputs])  # type: ignore[misc]
                samples[mode].extend(durations)
    finally:
        for store in stores.values():
            await store.aclose()
    return {mode: 1000 * statistics.median(values) for mode, values in samples.items()}


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="recallstore-bench-", dir=args.dir) as tmp:
        columns: dict[str, dict[str, float]] = {}
        factories: list[tuple[str, Callable[[], MemoryStore]]] = [
            ("sqlite FULL", lambda: SqliteMemoryStore(Path(tmp) / "full.db")),
            ("memory", InMemoryMemoryStore),
        ]
        if args.sqlite_only:
            factories = factories[:1]
        for name, make in factories:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            columns[name] = await bench_store(
                make(), 7, args.records, args.batch, args.singles, args.queries
            )
        # synchronous=NORMAL only changes commit cost: compare single writes alone, in
        # alternating rounds so that machine noise hits both modes alike.
        print("running sqlite FULL vs NORMAL single writes ...", file=sys.stderr, flush=True)
        per_write = await compare_synchronous(Path(tmp), args.singles)
        db_size = (Path(tmp) / "full.db").stat().st_size

    sqlite = columns["sqlite FULL"]
    memory = columns.get("memory", dict.fromkeys(sqlite, float("nan")))
    print(
        f"{args.records} records ({TENANTS} tenants, {USERS} users), batches of {args.batch}, "
        f"{args.singles} single writes, {args.queries} queries per row"
    )
    print(f"database files under {args.dir or tempfile.gettempdir()}")
    header = f"{'measure':<22}{'sqlite':>12}{'memory':>12}{'sqlite/memory':>15}"
    print(header)
    print("-" * len(header))
    for measure in sqlite:
        a, b = sqlite[measure], memory[measure]
        ratio = a / b if b else float("inf")
        print(f"{measure:<22}{a:>12.2f}{b:>12.2f}{ratio:>15.2f}")
    full, normal = per_write["FULL"], per_write["NORMAL"]
    print(
        f"single write, median ms over alternating rounds: synchronous=FULL {full:.2f}, "
        f"NORMAL {normal:.2f} (FULL/NORMAL = {full / normal:.2f})"
    )
    print(f"sqlite file size: {db_size / 1e6:.1f} MB ({db_size / args.records:.0f} bytes/record)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--singles", type=int, default=200)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument(
        "--sqlite-only", action="store_true", help="skip the in-memory store (for large --records)"
    )
    parser.add_argument("--dir", help="where to put the database files (default: the temp dir)")
    args = parser.parse_args(argv)
    if args.records <= args.singles:
        parser.error("--records must exceed --singles")
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
