"""Keyword search and scoped listing through the stores, beside plain sqlite3 on the same file.

Builds ``--records`` synthetic memories (store_bench's corpus: 12 Zipf-distributed
made-up words) for ``--users`` users in 10 tenants, scope ``{"tenant", "user"}``,
through ``SqliteMemoryStore.write``, then times, on fresh random queries (after a
warm-up pass of other queries):

* user-scoped search (two mid-frequency words and a rare one, limit 10);
* a user-scoped listing (limit 10);
* unscoped search;
* the floor of each search: the same FTS5 expression the store sends, run in plain
  ``sqlite3`` on the same file with FTS5's own ``ORDER BY bm25() LIMIT 10``.

With ``--postgres URL`` the same records go into a throw-away schema and the same
user-scoped searches and listings run there.

    .venv/bin/python benchmarks/search_bench.py [--records 100000] [--users N]
        [--queries 200] [--postgres postgresql://postgres@127.0.0.1:5432/test]
        [--reuse FILE] [--keep-schema NAME]
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
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from store_bench import Corpus

from recallstore._search.query import plan_query
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.search import candidates_sql, match_expression
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore

TENANTS = 10
BATCH = 5_000


def scope_of(user: int) -> dict[str, str]:
    return {"tenant": f"t{user % TENANTS}", "user": f"u{user}"}


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


async def build(store: MemoryStore, corpus: Corpus, records: int, users: int) -> float:
    rng = random.Random(3)
    started = time.perf_counter()
    for offset in range(0, records, BATCH):
        await store.write(
            [
                MemoryWriteInput(scope=scope_of(rng.randrange(users)), content=corpus.sentence())
                for _ in range(min(BATCH, records - offset))
            ]
        )
    return time.perf_counter() - started


def percentiles(durations: list[float]) -> str:
    p50, p95 = summary(durations)
    return f"{p50:.2f} / {p95:.2f}"


def timed_floor(conn: sqlite3.Connection, queries: list[MemorySearchQuery]) -> list[float]:
    """Plain sqlite3: the store's FTS5 expression, FTS5's bm25() order, limit 10."""
    durations = []
    for query in queries:
        text = query.query or ""
        sql, params = candidates_sql(query, datetime.now(UTC), ordered=True)
        sql = sql.replace("bm25(memory_fts, 1.0, 0.0)", "bm25(memory_fts)")
        expression = match_expression(query.scope, plan_query(text), text)
        started = time.perf_counter()
        conn.execute(sql, [expression, *params, query.limit]).fetchall()
        durations.append(time.perf_counter() - started)
    return durations


def make_queries(users: int, count: int, seed: int) -> dict[str, list[Any]]:
    """The same queries for the same seed: texts from the store's vocabulary, users."""
    corpus = Corpus(users)  # the vocabulary the records were written with
    corpus._rng.seed(seed)  # fresh query words, the same vocabulary
    rng = random.Random(seed)
    picked = [rng.randrange(users) for _ in range(count)]
    texts = [corpus.query() for _ in range(count)]
    return {
        "user-scoped search": [
            MemorySearchQuery(query=text, scope=scope_of(user), limit=10)
            for text, user in zip(texts, picked, strict=True)
        ],
        "user-scoped listing": [
            MemorySearchQuery(scope=scope_of(user), limit=10) for user in picked
        ],
        "unscoped search": [MemorySearchQuery(query=text, limit=10) for text in texts],
    }


async def measure(store: MemoryStore, users: int, count: int) -> dict[str, str]:
    warm = make_queries(users, count, seed=1)
    for queries in warm.values():
        for query in queries:
            await store.search(query)
    results = {}
    for name, queries in make_queries(users, count, seed=2).items():
        calls = [lambda q=query: store.search(q) for query in queries]
        results[name] = percentiles(await timed(calls))
    return results


async def run(args: argparse.Namespace) -> None:
    users = args.users or max(args.records // 100, 1)
    corpus = Corpus(users)
    print(f"{args.records:,} records, {users:,} users in {TENANTS} tenants; {args.queries} queries")
    with tempfile.TemporaryDirectory(prefix="recallstore-search-", dir=args.dir) as tmp:
        path = args.reuse or Path(tmp) / "memory.db"
        existing = path.exists()
        async with SqliteMemoryStore(path) as store:
            if not existing:
                built = await build(store, corpus, args.records, users)
                print(f"sqlite: built in {built:.0f} s")
            sqlite_results = await measure(store, users, args.queries)
        conn = sqlite3.connect(path)
        queries = make_queries(users, args.queries, seed=2)
        timed_floor(conn, make_queries(users, args.queries, seed=1)["unscoped search"])
        floors = {
            name: percentiles(timed_floor(conn, queries[name]))
            for name in ("user-scoped search", "unscoped search")
        }
        conn.close()
    postgres_results: dict[str, str] = {}
    if args.postgres:
        postgres_results = await run_postgres(
            args.postgres, corpus, args.records, users, args.queries, args.keep_schema
        )
    print("| measure (p50 / p95 ms) | SQLite store | plain sqlite3 floor | Postgres store |")
    print("|---|---|---|---|")
    for name, value in sqlite_results.items():
        print(f"| {name} | {value} | {floors.get(name, '—')} | {postgres_results.get(name, '—')} |")


async def run_postgres(
    dsn: str, corpus: Corpus, records: int, users: int, count: int, keep: str = ""
) -> dict[str, str]:
    import psycopg

    from recallstore.backends.postgres import PostgresMemoryStore

    schema = keep or f"bench_{uuid.uuid4().hex[:12]}"
    try:
        async with PostgresMemoryStore(dsn, schema=schema) as store:
            if not (await store.search(MemorySearchQuery(limit=1))):
                built = await build(store, Corpus(users), records, users)
                print(f"postgres: built in {built:.0f} s")
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                await conn.execute(f"ANALYZE {schema}.memory_records")
            return await measure(store, users, count)
    finally:
        if not keep:
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=0, help="default: records / 100")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--postgres", default="", help="also measure Postgres at this URL")
    parser.add_argument("--dir", help="where to put the database file (default: the temp dir)")
    parser.add_argument(
        "--reuse",
        type=Path,
        help="keep the SQLite file here, and measure an existing one without rebuilding it",
    )
    parser.add_argument(
        "--keep-schema",
        default="",
        help="Postgres schema to build into and keep (measured without rebuilding if filled)",
    )
    asyncio.run(run(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
