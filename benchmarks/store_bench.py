"""SqliteMemoryStore beside its floors: the same SQL through plain sqlite3 and aiosqlite.

Every figure is printed next to two floors measured in the same run on the same rows:
the statements the store executed, replayed through a plain ``sqlite3`` connection and
through an ``aiosqlite`` connection with the store's PRAGMAs (WAL, ``synchronous=FULL``).
Store calls and floor replays alternate, so machine noise hits them alike.

* **batch write**: ``--batch`` records per ``write()`` up to the size; the floors run
  the store's own INSERT statements (``executemany``, rows built beforehand) into
  files of their own, one ``BEGIN IMMEDIATE … COMMIT`` per batch;
* **lone write**: one record per call, one call at a time;
* **64 writers**: 64 tasks writing one record per call at once (group commit);
* **get, list user, search, search user, invalidate, delete** on the loaded store.

The floors of the last two items replay, statement by statement, what the store ran
for an untimed twin call (captured with a trace callback; timed calls run untraced):
writes into the floor files, reads on the store's own file, and invalidate and delete
on the store's file with the twin's record id swapped for another record's.

Sizes are records in 10 tenants and ``records / 100`` users (10,000 users at 1M).

    .venv/bin/python benchmarks/store_bench.py                    # 10k and 100k
    .venv/bin/python benchmarks/store_bench.py --records 1000000  # 1M, about 10 min
    .venv/bin/python benchmarks/store_bench.py --synchronous NORMAL  # what FULL costs
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from recallstore.backends._tuning import tune
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.insert import PendingInsert, insert_now, next_seq
from recallstore.backends.sqlite.rows import on_thread
from recallstore.backends.sqlite.wal import AUTOCHECKPOINT_PAGES
from recallstore.records import MemoryRecord, MemorySearchQuery, MemoryWriteInput
from recallstore.store import MonotonicClock, new_record_id, record_from_input

TENANTS = 10
RECORDS_PER_USER = 100
WRITERS = 64
PRAGMAS = [
    "PRAGMA synchronous = FULL",  # --synchronous replaces it
    "PRAGMA foreign_keys = ON",
    "PRAGMA secure_delete = ON",
    "PRAGMA busy_timeout = 10000",
    f"PRAGMA wal_autocheckpoint = {AUTOCHECKPOINT_PAGES}",
]


class Corpus:
    """Deterministic synthetic memories with a Zipf-like word distribution."""

    def __init__(self, users: int, seed: int = 7, vocabulary: int = 5_000) -> None:
        self.users = users
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
        user = self._rng.randrange(self.users)
        return {"tenant": f"t{user % TENANTS}", "user": f"u{user}"}

    def inputs(self, count: int) -> list[MemoryWriteInput]:
        return [MemoryWriteInput(scope=self.scope(), content=self.sentence()) for _ in range(count)]

    def query(self) -> str:
        # Two mid-frequency words and one rare one, like a short user question.
        return " ".join(
            [self._rng.choice(self.words[20:500]) for _ in range(2)]
            + [self._rng.choice(self.words[500:])]
        )


@dataclass
class Figure:
    """One measure: the store's value and its two floors, in the same unit."""

    name: str
    unit: str  # "records/s" (higher is better) or "ms p50" (lower is better)
    store: float
    sqlite3: float
    aiosqlite: float
    target: str = ""

    def times(self, floor: float) -> float:
        """How many times the floor's cost the store pays (1.0 = as fast as the floor)."""
        if self.unit == "records/s":
            return floor / self.store
        return self.store / floor


class Floors:
    """A plain sqlite3 and an aiosqlite connection, configured like the store's."""

    def __init__(self, sync: sqlite3.Connection, conn: aiosqlite.Connection) -> None:
        self.sync, self.conn = sync, conn

    @classmethod
    async def open(cls, sync_path: Path, async_path: Path) -> Floors:
        sync = sqlite3.connect(sync_path, isolation_level=None, check_same_thread=False)
        conn = await aiosqlite.connect(async_path, isolation_level=None)
        for pragma in PRAGMAS:
            sync.execute(pragma)
            await conn.execute(pragma)
        return cls(sync, conn)

    async def close(self) -> None:
        self.sync.close()
        await self.conn.close()

    def replay_sync(self, statements: Sequence[str]) -> float:
        started = time.perf_counter()
        for sql in statements:
            self.sync.execute(sql).fetchall()
        return time.perf_counter() - started

    async def replay_async(self, statements: Sequence[str]) -> float:
        started = time.perf_counter()
        for sql in statements:
            await self.conn.execute_fetchall(sql)
        return time.perf_counter() - started


class Trace:
    """The statements a store's connection runs during one call (untimed: tracing slows
    the connection, so timed calls run without it)."""

    def __init__(self, store: SqliteMemoryStore) -> None:
        assert store._conn is not None
        self._conn = store._conn
        self._statements: list[str] = []

    def _record(self, sql: str) -> None:
        # SQLite also reports the programs a statement starts (triggers, FTS5's own
        # statements): as "-- …" comments, or as the outer statement's text again.
        repeated = bool(self._statements) and self._statements[-1] == sql
        if not sql.startswith("--") and not repeated:
            self._statements.append(sql)

    async def of(self, call: Callable[[], Awaitable[object]]) -> list[str]:
        self._statements = []
        await self._conn.set_trace_callback(self._record)
        try:
            await call()
        finally:
            await self._conn.set_trace_callback(None)
        return self._statements


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


def p50_ms(durations: Sequence[float]) -> float:
    return 1000 * statistics.median(durations)


def build_rows(inputs: Sequence[MemoryWriteInput], clock: MonotonicClock) -> list[MemoryRecord]:
    """The records the store would build for ``inputs`` (fresh ids, for the floor files)."""
    return [record_from_input(inp, record_id=new_record_id(), now=clock()) for inp in inputs]


def floor_batch_sync(conn: sqlite3.Connection, records: Sequence[MemoryRecord]) -> float:
    started = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("SELECT max(created_at) FROM memory_records").fetchall()
    insert_now(conn, PendingInsert(records))  # the store's own statements
    conn.execute("COMMIT")
    return time.perf_counter() - started


async def floor_batch_async(conn: aiosqlite.Connection, records: Sequence[MemoryRecord]) -> float:
    started = time.perf_counter()
    await conn.execute("BEGIN IMMEDIATE")
    await conn.execute_fetchall("SELECT max(created_at) FROM memory_records")
    pending = PendingInsert(records)
    for sql, rows in pending.statements(await on_thread(conn, next_seq)):
        await conn.executemany(sql, rows)
    await conn.execute("COMMIT")
    return time.perf_counter() - started


async def bench_size(folder: Path, records: int, args: argparse.Namespace) -> list[Figure]:
    corpus = Corpus(users=max(records // RECORDS_PER_USER, 1))
    paths = {name: folder / f"{name}.db" for name in ("store", "sqlite3", "aiosqlite")}
    # The standard library's SQLite throughout: the floors use it, and two SQLite
    # libraries on one file in one process do not see each other's locks (what the
    # 'sqlite' extra's driver changes for deletes is delete_bench.py's figure).
    for path in paths.values():  # the same schema in every file
        async with SqliteMemoryStore(path, sqlite_driver="stdlib"):
            pass
    figures: list[Figure] = []
    clock = MonotonicClock()
    # Without the event journal: its batched search events would flush into the traced
    # statements the floors replay. What the journal costs is journal_bench.py's figure.
    shipped = SqliteMemoryStore(paths["store"], journal=None, sqlite_driver="stdlib")
    async with tune(shipped, synchronous=args.synchronous) as store:
        trace = Trace(store)
        writers = await Floors.open(paths["sqlite3"], paths["aiosqlite"])
        try:
            # Batch writes: every file gets the same inputs, batch by batch.
            spent = [0.0, 0.0, 0.0]
            for offset in range(0, records, args.batch):
                chunk = corpus.inputs(min(args.batch, records - offset))
                started = time.perf_counter()
                await store.write(chunk)
                spent[0] += time.perf_counter() - started
                rows = build_rows(chunk, clock)
                spent[1] += floor_batch_sync(writers.sync, rows)
                spent[2] += await floor_batch_async(writers.conn, build_rows(chunk, clock))
            figures.append(
                Figure("batch write", "records/s", *(records / s for s in spent), "≥ 25,000/s")
            )
            figures.append(await lone_writes(store, writers, trace, corpus, args.singles))
            figures.append(await many_writers(store, writers, trace, corpus, args.rounds))
        finally:
            await writers.close()
        readers = await Floors.open(paths["store"], paths["store"])
        try:
            figures.extend(await reads(store, readers, trace, corpus, args.queries))
            figures.extend(await changes(store, readers, trace, args.queries))
        finally:
            await readers.close()
    return figures


async def lone_writes(
    store: SqliteMemoryStore, floors: Floors, trace: Trace, corpus: Corpus, count: int
) -> Figure:
    """The floors replay the statements of an untimed write of the same shape."""
    samples: list[list[float]] = [[], [], []]
    for inp, twin in zip(corpus.inputs(count), corpus.inputs(count), strict=True):
        statements = await trace.of(lambda twin=twin: store.write([twin]))  # type: ignore[misc]
        samples[0].append(await timed(lambda inp=inp: store.write([inp])))  # type: ignore[misc]
        # The twin's record into the floor files (ids are unique per file).
        samples[1].append(floors.replay_sync(statements))
        samples[2].append(await floors.replay_async(statements))
    return Figure("lone write", "ms p50", *map(p50_ms, samples), "≤ 1.5× aiosqlite")


async def many_writers(
    store: SqliteMemoryStore, floors: Floors, trace: Trace, corpus: Corpus, rounds: int
) -> Figure:
    """64 tasks, one record per call, ``rounds`` calls each; the floors replay what an
    untimed run of the same shape ran."""

    def everyone(inputs: list[list[MemoryWriteInput]]) -> Callable[[], Awaitable[object]]:
        async def writer(mine: list[MemoryWriteInput]) -> None:
            for inp in mine:
                await store.write([inp])

        async def run_all() -> None:
            await asyncio.gather(*(writer(mine) for mine in inputs))

        return run_all

    statements = await trace.of(everyone([corpus.inputs(rounds) for _ in range(WRITERS)]))
    elapsed = await timed(everyone([corpus.inputs(rounds) for _ in range(WRITERS)]))
    total = WRITERS * rounds
    sync_seconds = floors.replay_sync(statements)
    async_seconds = await floors.replay_async(statements)
    return Figure(
        f"{WRITERS} writers",
        "records/s",
        total / elapsed,
        total / sync_seconds,
        total / async_seconds,
        "≥ 5,000/s",
    )


async def reads(
    store: SqliteMemoryStore, floors: Floors, trace: Trace, corpus: Corpus, count: int
) -> list[Figure]:
    scopes = [corpus.scope() for _ in range(count)]
    texts = [corpus.query() for _ in range(count)]
    listed = await store.search(MemorySearchQuery(limit=count))
    ids = [hit.record.id for hit in listed]
    plans: dict[str, tuple[list[Callable[[], Awaitable[object]]], str]] = {
        "get": ([lambda i=i: store.get(i) for i in ids], "≤ 2× aiosqlite"),  # type: ignore[misc]
        "list user": (
            [lambda s=s: store.search(MemorySearchQuery(scope=s)) for s in scopes],  # type: ignore[misc]
            "≤ 2× aiosqlite",
        ),
        "search": (
            [lambda t=t: store.search(MemorySearchQuery(query=t)) for t in texts],  # type: ignore[misc]
            "",
        ),
        "search user": (
            [
                lambda t=t, s=s: store.search(MemorySearchQuery(query=t, scope=s))  # type: ignore[misc]
                for t, s in zip(texts, scopes, strict=True)
            ],
            "",
        ),
    }
    figures = []
    for name, (calls, target) in plans.items():
        samples: list[list[float]] = [[], [], []]
        for call in calls:
            statements = await trace.of(call)  # untimed: the SQL to replay
            samples[0].append(await timed(call))
            samples[1].append(floors.replay_sync(statements))
            samples[2].append(await floors.replay_async(statements))
        figures.append(Figure(name, "ms p50", *map(p50_ms, samples), target))
    return figures


async def newest_ids(store: SqliteMemoryStore, count: int) -> list[str]:
    """Up to ``count`` valid record ids, each tenant's newest in turn: one listing is
    capped at the store's limit, so a large ``--queries`` lists tenant by tenant."""
    per_tenant = -(-count // TENANTS)
    ids: list[str] = []
    for tenant in range(TENANTS):
        query = MemorySearchQuery(scope={"tenant": f"t{tenant}"}, limit=min(per_tenant, 1_000))
        ids.extend(hit.record.id for hit in await store.search(query))
    return ids[:count]


async def changes(
    store: SqliteMemoryStore, floors: Floors, trace: Trace, count: int
) -> list[Figure]:
    """invalidate and delete: the floors replay the store's statements on other records."""
    ids = await newest_ids(store, 8 * count)
    figures = []
    for name, operation, target in (
        ("invalidate", lambda i: store.invalidate(i, "benchmark"), "≤ 2× aiosqlite"),
        ("delete", store.delete, ""),
    ):
        samples: list[list[float]] = [[], [], []]
        for _ in range(count):
            twin, mine, for_sync, for_async = (ids.pop() for _ in range(4))
            statements = await trace.of(lambda t=twin, op=operation: op(t))  # type: ignore[misc]
            samples[0].append(await timed(lambda m=mine, op=operation: op(m)))  # type: ignore[misc]
            samples[1].append(floors.replay_sync([s.replace(twin, for_sync) for s in statements]))
            replayed = [s.replace(twin, for_async) for s in statements]
            samples[2].append(await floors.replay_async(replayed))
        figures.append(Figure(name, "ms p50", *map(p50_ms, samples), target))
    return figures


def print_table(records: int, figures: list[Figure]) -> None:
    users = max(records // RECORDS_PER_USER, 1)
    print(f"\n{records:,} records, {TENANTS} tenants, {users:,} users")
    header = (
        f"{'measure':<14}{'unit':<11}{'store':>10}{'sqlite3':>10}{'aiosqlite':>11}"
        f"{'×sqlite3':>10}{'×aiosqlite':>12}  target"
    )
    print(header)
    print("-" * len(header))
    for f in figures:
        print(
            f"{f.name:<14}{f.unit:<11}{f.store:>10,.2f}{f.sqlite3:>10,.2f}{f.aiosqlite:>11,.2f}"
            f"{f.times(f.sqlite3):>10.2f}{f.times(f.aiosqlite):>12.2f}  {f.target}"
        )


async def run(args: argparse.Namespace) -> None:
    for records in args.records:
        print(f"running {records:,} records ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="recallstore-bench-", dir=args.dir) as tmp:
            figures = await bench_size(Path(tmp), records, args)
        print_table(records, figures)
    print(
        "\n×floor = the store's cost over the floor's (time over time, or rate over rate): "
        "1.00 is as fast as the same SQL alone."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--singles", type=int, default=200, help="lone writes timed")
    parser.add_argument("--rounds", type=int, default=20, help="writes per concurrent writer")
    parser.add_argument("--queries", type=int, default=50, help="calls timed per read measure")
    parser.add_argument("--dir", help="where to put the database files (default: the temp dir)")
    parser.add_argument(
        "--synchronous",
        choices=["FULL", "NORMAL"],
        default="FULL",
        help="the store's and the floors' synchronous mode (the store always runs FULL)",
    )
    args = parser.parse_args(argv)
    PRAGMAS[0] = f"PRAGMA synchronous = {args.synchronous}"
    if min(args.records) < max(args.batch, 8 * args.queries):
        parser.error("--records must be at least --batch and 8 × --queries")
    if 8 * args.queries > TENANTS * 1_000:
        parser.error(
            f"--queries {args.queries}: at most {TENANTS * 1_000 // 8} (one listing per tenant)"
        )
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
