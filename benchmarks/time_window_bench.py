"""A scoped search with an observed-time window against the same search without one.

One SQLite store (through ``SqliteMemoryStore``) holds ``--records`` memories (default
100,000; the issue's size is ``--records 1000000``) of Zipf-distributed made-up words
for ``records / 100`` users in 10 tenants, each observed on a random day of the past
year. The same user-scoped keyword queries and listings run with and without a
30-day window (``observed_after`` / ``observed_before``), alternating which goes first,
in one run; the table gives p50 and p95 of each and the ratio of the p50s.

    .venv/bin/python benchmarks/time_window_bench.py [--records 100000] [--queries 400]

``--db PATH`` keeps the store in ``PATH``, and a later run with the same ``--db``,
``--records`` and ``--seed`` measures it again without building it (the 1M file takes
minutes to build; a file an older release built is migrated when it opens, and the
migration's time is printed). ``--backend memory`` or ``--backend postgres`` (a
schema of its own in ``--postgres``, dropped afterwards) measures another backend's
windowed listing and search the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore

NOW = datetime.now(UTC)
_BATCH = 2_000


def _vocabulary(rng: random.Random, size: int = 5_000) -> list[str]:
    letters = "bcdfghjklmnpqrstvwz"
    vowels = "aeiou"
    return [
        "".join(rng.choice(letters) + rng.choice(vowels) for _ in range(rng.randint(2, 4)))
        for _ in range(size)
    ]


def _word(rng: random.Random, words: list[str]) -> str:
    # Zipf-like: index ~ exponential, so a few words are common and most are rare.
    return words[min(int(rng.expovariate(1 / 300)), len(words) - 1)]


async def build(store: MemoryStore, records: int, seed: int) -> tuple[list[str], int]:
    rng = random.Random(seed)
    words = _vocabulary(rng)
    users = max(records // 100, 1)
    started = time.perf_counter()
    for first in range(0, records, _BATCH):
        batch = []
        for _ in range(first, min(first + _BATCH, records)):
            user = rng.randrange(users)
            batch.append(
                MemoryWriteInput(
                    scope={"tenant": f"t{user % 10}", "user": f"u{user}"},
                    content=" ".join(_word(rng, words) for _ in range(rng.randint(6, 14))),
                    observed_at=NOW - timedelta(days=rng.uniform(0, 365)),
                )
            )
        await store.write(batch)
        if first and first % 200_000 == 0:
            print(f"  {first:,} written, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    print(f"built {records:,} records for {users:,} users in {time.perf_counter() - started:.1f} s")
    return words, users


async def measure(
    store: MemoryStore, words: list[str], users: int, queries: int, seed: int
) -> None:
    rng = random.Random(seed + 1)
    timings: dict[str, list[float]] = {
        name: [] for name in ("search", "search+window", "list", "list+window")
    }
    counts: dict[str, int] = dict.fromkeys(timings, 0)
    for index in range(queries):
        user = rng.randrange(users)
        scope = {"tenant": f"t{user % 10}", "user": f"u{user}"}
        text = " ".join(_word(rng, words) for _ in range(3))
        start = NOW - timedelta(days=rng.uniform(30, 365))
        window = {"observed_after": start, "observed_before": start + timedelta(days=30)}
        pairs = [
            ("search", MemorySearchQuery(query=text, scope=scope)),
            ("search+window", MemorySearchQuery(query=text, scope=scope, **window)),
            ("list", MemorySearchQuery(scope=scope)),
            ("list+window", MemorySearchQuery(scope=scope, **window)),
        ]
        if index % 2:
            pairs = [pairs[1], pairs[0], pairs[3], pairs[2]]
        for name, query in pairs:
            began = time.perf_counter()
            hits = await store.search(query)
            timings[name].append(time.perf_counter() - began)
            counts[name] += len(hits)
    print(f"{queries} user-scoped queries, each with and without a 30-day window, alternating")
    print(f"{'query':<15} {'p50 ms':>8} {'p95 ms':>8} {'hits/q':>7}")
    for name, values in timings.items():
        ordered = sorted(values)
        p95 = ordered[int(0.95 * (len(ordered) - 1))]
        print(
            f"{name:<15} {1000 * statistics.median(values):8.3f} {1000 * p95:8.3f} "
            f"{counts[name] / queries:7.2f}"
        )
    for plain, windowed in (("search", "search+window"), ("list", "list+window")):
        ratio = statistics.median(timings[windowed]) / statistics.median(timings[plain])
        print(f"p50 {windowed} / {plain}: {ratio:.2f}x")


async def build_or_open(path: Path, records: int, queries: int, seed: int) -> None:
    existed = await asyncio.to_thread(path.exists)
    started = time.perf_counter()
    async with SqliteMemoryStore(path, journal=None) as store:
        if existed:
            print(f"opened {path} in {time.perf_counter() - started:.1f} s (migration included)")
            words, users = _vocabulary(random.Random(seed)), max(records // 100, 1)
        else:
            words, users = await build(store, records, seed)
        await measure(store, words, users, queries, seed)


@asynccontextmanager
async def postgres_store(dsn: str) -> AsyncIterator[MemoryStore]:
    """A Postgres store in a schema of its own, dropped afterwards."""
    import psycopg

    from recallstore.backends.postgres import PostgresMemoryStore

    schema = f"window_{uuid.uuid4().hex[:12]}"
    try:
        async with PostgresMemoryStore(dsn, schema=schema) as store:
            yield store
    finally:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


async def main_async(
    records: int, queries: int, seed: int, directory: str | None, db: str | None, args: Any
) -> None:
    if args.backend != "sqlite":
        started = time.perf_counter()
        if args.backend == "memory":
            async with InMemoryMemoryStore() as store:
                words, users = await build(store, records, seed)
                await measure(store, words, users, queries, seed)
        else:
            async with postgres_store(args.postgres) as store:
                words, users = await build(store, records, seed)
                await measure(store, words, users, queries, seed)
        print(f"{args.backend}: {time.perf_counter() - started:.0f} s in all")
        return
    if db is not None:
        await build_or_open(Path(db), records, queries, seed)
        return
    with tempfile.TemporaryDirectory(prefix="recallstore-time-", dir=directory) as tmp:
        await build_or_open(Path(tmp) / "memory.db", records, queries, seed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--dir", default=None, help="where the temporary store goes")
    parser.add_argument("--db", default=None, help="a store file to keep, or to measure again")
    parser.add_argument("--backend", choices=("sqlite", "memory", "postgres"), default="sqlite")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args(argv)
    asyncio.run(main_async(args.records, args.queries, args.seed, args.dir, args.db, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
