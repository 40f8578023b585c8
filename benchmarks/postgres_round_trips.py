"""Per-operation cost of the Postgres store beside a plain psycopg floor, on the same
server and rows, direct and through PgBouncer in transaction mode (issue 42).

Loads ``--records`` records in ``--users`` users into a throw-away schema, batch by
batch, each batch into the store and then into the floor's table (same ids, users,
texts and times; a GIN index on its ``to_tsvector``, a ``(user, created_at)`` index):
that is the batch ingest figure. Then, direct and through a PgBouncer it starts
(``pool_mode = transaction``; the store with ``pool_mode="transaction"``, the floor
with ``prepare_threshold=None``), store and floor in turn, query by query:

- a user-scoped keyword search (10 hits), floor: ``user_id = $1 AND tsv @@ q``
  ordered by ``ts_rank``;
- the user's newest 10 (a listing), floor: ``ORDER BY created_at DESC LIMIT 10``;
- one durable single-record write (its own commit), floor: one ``INSERT``;
- ``--batches`` more batches of 1,000 (records a second; 20, since five swung from 0.46 to
  0.68 of the floor between runs under load), floor: ``executemany`` in a transaction.

Each is timed (p50) and counted on the wire by a relay (``_wire.py``): statements
(``Query``/``Execute`` messages) and round trips (client bursts after the server
answered), the median per call. One run, so a busy machine slows store and floor alike:
read the ratios.

    .venv/bin/python benchmarks/postgres_round_trips.py [--records 100000] [--users 1000]
        [--queries 200] [--batches 20] [--postgres URL] [--no-pgbouncer]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from _pgbouncer import binary, pgbouncer
from _wire import relay

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.records import MemoryRecord, MemorySearchQuery, MemoryWriteInput

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
_BATCH = 1_000
_VOCABULARY = [
    f"{a}{b}{c}" for a in ("ka", "mo", "ri", "te", "su") for b in "aeiou" for c in "lmnprstv"
] + [f"{w}word" for w in ("big", "tea", "job", "car", "dog", "sun", "map", "pen")]


def _text(rng: random.Random) -> str:
    # Zipf-like: a few words in many records, most in few.
    words = rng.choices(_VOCABULARY, weights=[1 / (n + 1) for n in range(len(_VOCABULARY))], k=10)
    return " ".join(words)


def _inputs(records: int, users: int, seed: int = 7) -> Iterator[list[MemoryWriteInput]]:
    rng = random.Random(seed)
    for start in range(0, records, _BATCH):
        size = min(_BATCH, records - start)
        yield [
            MemoryWriteInput(scope={"user": f"u{rng.randrange(users)}"}, content=_text(rng))
            for _ in range(size)
        ]


def _floor_rows(records: list[MemoryRecord]) -> list[tuple[Any, ...]]:
    return [(r.id, r.scope["user"], r.content, r.created_at) for r in records]


_FLOOR_INSERT = (
    "INSERT INTO {t} (id, user_id, content, created_at, tsv) "
    "VALUES (%s, %s, %s, %s, to_tsvector('english', %s))"
)


async def _floor_insert(conn: Any, table: str, rows: list[tuple[Any, ...]]) -> None:
    async with conn.transaction(), conn.cursor() as cursor:
        await cursor.executemany(_FLOOR_INSERT.format(t=table), [(*row, row[2]) for row in rows])


def _p50(times: list[float]) -> float:
    return 1000 * statistics.median(times)


async def _load(dsn: str, schema: str, records: int, users: int) -> dict[str, float]:
    import psycopg

    table = f"{schema}.floor_records"
    store_time = floor_time = 0.0
    async with (
        PostgresMemoryStore(dsn, schema=schema) as store,
        await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn,
    ):
        await conn.execute(
            f"CREATE TABLE {table} (id text PRIMARY KEY, user_id text NOT NULL, "
            "content text NOT NULL, created_at timestamptz NOT NULL, tsv tsvector NOT NULL)"
        )
        await conn.execute(f"CREATE INDEX ON {table} USING gin (tsv)")
        await conn.execute(f"CREATE INDEX ON {table} (user_id, created_at DESC, id DESC)")
        for batch in _inputs(records, users):
            started = time.perf_counter()
            written = await store.write(batch)
            store_time += time.perf_counter() - started
            rows = _floor_rows(written)
            started = time.perf_counter()
            await _floor_insert(conn, table, rows)
            floor_time += time.perf_counter() - started
        # Every table of the store's schema, as autovacuum would have by then.
        cursor = await conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1", (schema,)
        )
        for (name,) in await cursor.fetchall():
            await conn.execute(f"VACUUM ANALYZE {schema}.{name}")
    return {"store": records / store_time, "floor": records / floor_time}


class _Floor:
    """The same operations in plain psycopg on one connection."""

    def __init__(self, conn: Any, schema: str) -> None:
        self.conn = conn
        self.table = f"{schema}.floor_records"

    async def search(self, user: str, words: str) -> list[Any]:
        cursor = await self.conn.execute(
            f"SELECT id, user_id, content, created_at FROM {self.table} "
            "WHERE user_id = %s AND tsv @@ plainto_tsquery('english', %s) "
            "ORDER BY ts_rank(tsv, plainto_tsquery('english', %s)) DESC LIMIT 10",
            (user, words, words),
        )
        return list(await cursor.fetchall())

    async def listing(self, user: str) -> list[Any]:
        cursor = await self.conn.execute(
            f"SELECT id, user_id, content, created_at FROM {self.table} "
            "WHERE user_id = %s ORDER BY created_at DESC, id DESC LIMIT 10",
            (user,),
        )
        return list(await cursor.fetchall())

    async def write(self, user: str, text: str) -> None:
        now = datetime.now(UTC) + timedelta(days=1)
        await self.conn.execute(
            _FLOOR_INSERT.format(t=self.table), (uuid.uuid4().hex, user, text, now, text)
        )


Operation = Callable[[str, str], Awaitable[object]]


def _operations(
    store: PostgresMemoryStore, floor: _Floor
) -> dict[str, tuple[Operation, Operation]]:
    async def search(user: str, words: str) -> object:
        return await store.search(MemorySearchQuery(query=words, scope={"user": user}, limit=10))

    async def listing(user: str, _: str) -> object:
        return await store.search(MemorySearchQuery(scope={"user": user}, limit=10))

    async def write(user: str, text: str) -> object:
        return await store.write([MemoryWriteInput(scope={"user": user}, content=text)])

    async def floor_listing(user: str, _: str) -> object:
        return await floor.listing(user)

    return {
        "user-scoped search": (search, floor.search),
        "newest 10 (listing)": (listing, floor_listing),
        "single durable write": (write, floor.write),
    }


def _calls(users: int, count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [
        (f"u{rng.randrange(users)}", " ".join(rng.sample(_VOCABULARY[:40], 2)))
        for _ in range(count)
    ]


async def _open(dsn: str, schema: str, pooled: bool) -> tuple[PostgresMemoryStore, Any]:
    import psycopg

    mode = "transaction" if pooled else "session"
    store = PostgresMemoryStore(dsn, schema=schema, pool_mode=mode)
    await store.open()
    extra: dict[str, Any] = {"prepare_threshold": None} if pooled else {}
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True, **extra)
    return store, conn


async def _measure(
    dsn: str, schema: str, pooled: bool, users: int, queries: int, batches: int
) -> dict[str, tuple[float, float]]:
    """p50 ms of (store, floor) per operation, alternating call by call."""
    store, conn = await _open(dsn, schema, pooled)
    try:
        found: dict[str, tuple[float, float]] = {}
        for seed, (name, (mine, plain)) in enumerate(
            _operations(store, _Floor(conn, schema)).items()
        ):
            calls = _calls(users, queries, seed)
            for user, words in calls[:20]:  # warm caches and connections
                await mine(user, words)
                await plain(user, words)
            timed: tuple[list[float], list[float]] = ([], [])
            for user, words in calls:
                for side, operation in enumerate((mine, plain)):
                    started = time.perf_counter()
                    await operation(user, words)
                    timed[side].append(time.perf_counter() - started)
            found[name] = (_p50(timed[0]), _p50(timed[1]))
        # Batch ingest on this path too: records a second, store and floor in turn.
        spent = [0.0, 0.0]
        for batch in _inputs(batches * _BATCH, users, seed=99):
            started = time.perf_counter()
            written = await store.write(batch)
            spent[0] += time.perf_counter() - started
            started = time.perf_counter()
            await _floor_insert(conn, f"{schema}.floor_records", _floor_rows(written))
            spent[1] += time.perf_counter() - started
        found["batch ingest"] = (batches * _BATCH / spent[0], batches * _BATCH / spent[1])
        return found
    finally:
        await store.aclose()
        await conn.close()


async def _count(
    dsn: str, schema: str, pooled: bool, users: int
) -> dict[str, tuple[tuple[int, int], tuple[int, int]]]:
    """Median (statements, round trips) per call of (store, floor), through a relay."""
    parts = urlsplit(dsn)
    async with relay(parts.hostname or "127.0.0.1", parts.port or 5432) as (port, counts):
        host = f"{parts.username}@127.0.0.1:{port}" if parts.username else f"127.0.0.1:{port}"
        relayed = urlunsplit(parts._replace(netloc=host, query="sslmode=disable"))
        store, conn = await _open(relayed, schema, pooled)
        try:
            found = {}
            for seed, (name, pair) in enumerate(_operations(store, _Floor(conn, schema)).items()):
                per_side = []
                for operation in pair:
                    seen: list[tuple[int, int]] = []
                    for user, words in _calls(users, 30, 100 + seed):
                        before = (counts.statements, counts.round_trips)
                        await operation(user, words)
                        seen.append((counts.statements - before[0], counts.round_trips - before[1]))
                    middle = (
                        int(statistics.median(n for n, _ in seen)),
                        int(statistics.median(n for _, n in seen)),
                    )
                    per_side.append(middle)
                found[name] = (per_side[0], per_side[1])
            return found
        finally:
            await store.aclose()
            await conn.close()


async def run(args: argparse.Namespace) -> int:
    import psycopg

    schema = f"trips_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(args.postgres, connect_timeout=5):
            pass
    except psycopg.Error as exc:
        print(f"skipped: PostgreSQL unreachable ({exc})")
        return 0
    try:
        rates = await _load(args.postgres, schema, args.records, args.users)
        print(
            f"{args.records:,} records, {args.users:,} users. Batch ingest ({_BATCH:,} a "
            f"write): store {rates['store']:,.0f}/s, floor {rates['floor']:,.0f}/s "
            f"({rates['store'] / rates['floor']:.2f} of the floor)"
        )
        targets = [("direct", args.postgres, False)]
        with ExitStack() as stack:
            if not args.no_pgbouncer and binary() is not None:
                targets.append(("pgbouncer", stack.enter_context(pgbouncer(args.postgres)), True))
            elif not args.no_pgbouncer:
                print("pgbouncer not installed: direct only")
            print(
                "| operation | path | store p50 | floor p50 | ratio | store statements / "
                "round trips | floor statements / round trips |"
            )
            print("|---|---|---|---|---|---|---|")
            for label, dsn, pooled in targets:
                times = await _measure(dsn, schema, pooled, args.users, args.queries, args.batches)
                trips = await _count(dsn, schema, pooled, args.users)
                mine, plain = times.pop("batch ingest")
                print(
                    f"| batch ingest, {_BATCH:,} a write | {label} | {mine:,.0f}/s | "
                    f"{plain:,.0f}/s | {mine / plain:.2f} of the floor | | |"
                )
                for name, (mine, plain) in times.items():
                    (ms, mr), (fs, fr) = trips[name]
                    print(
                        f"| {name} | {label} | {mine:.2f} ms | {plain:.2f} ms | "
                        f"×{mine / plain:.1f} | {ms} / {mr} | {fs} / {fr} |"
                    )
    finally:
        with psycopg.connect(args.postgres, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batches", type=int, default=20, help="batches of ingest a path")
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, help="server URL")
    parser.add_argument("--no-pgbouncer", action="store_true", help="direct only")
    return asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
