"""A user's search right after a write to another scope, beside the same search with none.

In a live store other users' agents write all the time. Until schema version 12 a
write to anyone dropped the SQLite store's BM25 statistics, and the next search
recounted its words over the whole index (issue 38). Two stores, built through the
public API into a fresh SQLite file each:

* **garden** (``--records``, default 200,000): that many records of 2,000 other users,
  every one holding "garden", and user "me" with 3 records holding it; the search is
  "garden" within ``{"user": "me"}``;
* **engine** (``--engine``, default none; the issue's size is 1,000,000): records of
  ``store_bench``'s corpus (12 Zipf-distributed words) in ``records / 100`` users of
  10 tenants; each round searches a random user's scope for ``store_bench``'s query
  (two mid-frequency words and a rare one).

Each round runs one search timed with no write before it (**quiet**, after an untimed
run of the same search), then right after one record written to another user's scope
and holding the query's words (**live**; the write is timed too), then, after another
untimed run, right after an invalidation of another user's record (a write that
leaves the index and its statistics alone: what any write costs the next search, the
floor of the live figure). Quiet and live alternate, so machine noise hits both alike.
The table gives p50/p95, the ratios of the p50s to quiet's (the target for live is
1.5× at most) and how fast the store was loaded.

The **SQLite floor** of that ratio: each round's search captured from the store's
connection warm (quiet) and right after a write (live: it also re-reads its words'
counts), and one invalidation's statements, replayed through a plain ``sqlite3``
connection on the same file with the store's PRAGMAs (the store idle): the quiet
statements timed after an untimed run of them, then the live statements right after
the invalidation's (another record's id each round). What a committed write costs the
next search in SQLite itself, with no Python of the store's around it.

    .venv/bin/python benchmarks/live_search.py [--records 200000] [--engine 1000000]
        [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from store_bench import PRAGMAS, TENANTS, Corpus, Trace

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput

BATCH = 1_000
GARDEN_USERS = 2_000
MINE = [
    "my garden has tomatoes and basil",
    "watered the garden at dawn before work",
    "the garden gnome came from grandma",
]


@dataclass
class Round:
    """One search, the record a write to another scope adds before its live run, and
    the record of another scope invalidated before its last run."""

    query: MemorySearchQuery
    elsewhere: MemoryWriteInput
    invalidated: str


@dataclass
class Result:
    name: str
    records: int
    load_rate: float
    quiet: list[float]
    live: list[float]
    writes: list[float]
    after_invalidate: list[float]
    floor_quiet: list[float]
    floor_quiet_live: list[float]
    floor_after_write: list[float]


def _p50(times: list[float]) -> float:
    return statistics.median(times) * 1000


def _p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[int(0.95 * (len(ordered) - 1))] * 1000


async def _load(
    store: SqliteMemoryStore, records: int, make: Callable[[], MemoryWriteInput]
) -> float:
    """Write ``records`` inputs from ``make`` in batches; records per second."""
    started = time.perf_counter()
    for start in range(0, records, BATCH):
        await store.write([make() for _ in range(min(BATCH, records - start))])
    return records / (time.perf_counter() - started)


async def _timed_rounds(
    name: str,
    store: SqliteMemoryStore,
    records: int,
    load_rate: float,
    rounds: list[Round],
) -> Result:
    result = Result(name, records, load_rate, [], [], [], [], [], [], [])
    for one in rounds:
        await store.search(one.query)  # warm: page cache, statistics for these words
        begun = time.perf_counter()
        await store.search(one.query)
        result.quiet.append(time.perf_counter() - begun)
        begun = time.perf_counter()
        await store.write([one.elsewhere])
        result.writes.append(time.perf_counter() - begun)
        begun = time.perf_counter()
        hits = await store.search(one.query)
        result.live.append(time.perf_counter() - begun)
        assert hits, f"no hit for {one.query.query!r} in {one.query.scope}"
        await store.search(one.query)
        await store.invalidate(one.invalidated)
        begun = time.perf_counter()
        await store.search(one.query)
        result.after_invalidate.append(time.perf_counter() - begun)
    await _floor_rounds(store, rounds, result)
    return result


def _replay(conn: sqlite3.Connection, statements: list[str]) -> float:
    begun = time.perf_counter()
    for sql in statements:
        conn.execute(sql).fetchall()
    return time.perf_counter() - begun


def _one_transaction(statements: list[str], begin: str) -> list[str]:
    """A traced call's statements in one transaction of their own: the trace also holds
    FTS5's and the group commit's transaction control, which a replay must not repeat."""
    kept = (sql for sql in statements if not sql.startswith(("BEGIN", "COMMIT", "ROLLBACK")))
    return [begin, *kept, "COMMIT"]


async def _floor_rounds(store: SqliteMemoryStore, rounds: list[Round], result: Result) -> None:
    """The SQLite floor of live / quiet: the store's own statements through plain sqlite3."""
    trace = Trace(store)
    spares = await store.write([one.elsewhere for one in rounds])  # one to invalidate a round
    model = spares[0].id
    write = _one_transaction(await trace.of(lambda: store.invalidate(model)), "BEGIN IMMEDIATE")
    plans = []
    for one in rounds:
        # What the search runs warm, and right after a write (its words' counts re-read).
        quiet = await trace.of(lambda q=one.query: store.search(q))
        await store.write([one.elsewhere])
        live = await trace.of(lambda q=one.query: store.search(q))
        plans.append((_one_transaction(quiet, "BEGIN"), _one_transaction(live, "BEGIN")))
    floor = sqlite3.connect(store.path, isolation_level=None)
    try:
        for pragma in PRAGMAS:
            floor.execute(pragma)
        for (quiet, live), spare in zip(plans, spares[1:], strict=False):
            _replay(floor, live)  # warm: the page cache
            result.floor_quiet.append(_replay(floor, quiet))
            result.floor_quiet_live.append(_replay(floor, live))
            _replay(floor, [sql.replace(model, spare.id) for sql in write])
            result.floor_after_write.append(_replay(floor, live))
    finally:
        floor.close()


async def garden(folder: Path, records: int, rounds: int, seed: int) -> Result:
    corpus = Corpus(GARDEN_USERS, seed=seed)
    rng = random.Random(seed)

    def other() -> MemoryWriteInput:
        user = f"u{rng.randrange(GARDEN_USERS)}"
        return MemoryWriteInput(scope={"user": user}, content=f"garden {corpus.sentence(8)}")

    async with SqliteMemoryStore(folder / "garden.db") as store:
        rate = await _load(store, records, other)
        await store.write([MemoryWriteInput(scope={"user": "me"}, content=text) for text in MINE])
        query = MemorySearchQuery(query="garden", scope={"user": "me"}, limit=10)
        victims = await store.write([other() for _ in range(rounds)])
        plan = [Round(query, other(), victim.id) for victim in victims]
        return await _timed_rounds("garden", store, records + len(MINE), rate, plan)


async def engine(folder: Path, records: int, rounds: int, seed: int) -> Result:
    users = max(records // 100, 1)
    corpus = Corpus(users, seed=seed)

    def one() -> MemoryWriteInput:
        return MemoryWriteInput(scope=corpus.scope(), content=corpus.sentence())

    async with SqliteMemoryStore(folder / "engine.db") as store:
        rate = await _load(store, records, one)
        victims = iter(await store.write([one() for _ in range(rounds)]))
        plan = []
        while len(plan) < rounds:
            scope, text = corpus.scope(), corpus.query()
            query = MemorySearchQuery(query=text, scope={"user": scope["user"]}, limit=10)
            if not await store.search(query):
                continue  # a user none of whose records holds a word of the query
            elsewhere = MemoryWriteInput(
                scope=corpus.scope(), content=f"{text} {corpus.sentence(8)}"
            )
            plan.append(Round(query, elsewhere, next(victims).id))
        return await _timed_rounds(f"engine ({users:,} users)", store, records, rate, plan)


def report(results: list[Result]) -> None:
    print(
        "| store | records | loaded records/s | quiet p50 ms | quiet p95 ms | "
        "live p50 ms | live p95 ms | live / quiet (p50) | after invalidate p50 ms "
        "| after invalidate / quiet | write p50 ms | sqlite3 quiet p50 ms "
        "| sqlite3 live statements, no write p50 ms | sqlite3 live statements after a write p50 ms "
        "| sqlite3 after a write / quiet |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for result in results:
        quiet = _p50(result.quiet)
        floor = _p50(result.after_invalidate)
        print(
            f"| {result.name} | {result.records:,} | {result.load_rate:,.0f} | "
            f"{quiet:.2f} | {_p95(result.quiet):.2f} | "
            f"{_p50(result.live):.2f} | {_p95(result.live):.2f} | "
            f"{_p50(result.live) / quiet:.2f}× | {floor:.2f} | {floor / quiet:.2f}× | "
            f"{_p50(result.writes):.2f} | {_p50(result.floor_quiet):.3f} | "
            f"{_p50(result.floor_quiet_live):.3f} | {_p50(result.floor_after_write):.3f} | "
            f"{_p50(result.floor_after_write) / _p50(result.floor_quiet):.2f}× |"
        )


async def run(args: argparse.Namespace) -> None:
    results = []
    with tempfile.TemporaryDirectory(prefix="recallstore-live-", dir=args.dir) as tmp:
        folder = Path(tmp)
        if args.records:
            results.append(await garden(folder, args.records, args.rounds, args.seed))
        if args.engine:
            results.append(await engine(folder, args.engine, args.rounds, args.seed))
    print(f"{args.rounds} rounds each; user-scoped searches, limit 10; {TENANTS} tenants")
    report(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000, help="the garden store's size")
    parser.add_argument("--engine", type=int, default=0, help="the engine store's size")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", help="where to put the database files (default: the temp dir)")
    asyncio.run(run(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
