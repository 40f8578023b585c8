"""A live store beside the same store quiet: one conversation's operations while other
users' agents write at a steady rate.

In a deployment other users' agents write all the time, and every ``memory_save``
first runs a duplicate-check search. This benchmark loads ``--sizes`` records of
``store_bench``'s corpus (10 tenants, ``records / 100`` users, batches of 1,000) into a
fresh store, then runs one conversation's operations through the public API
(:class:`recallstore.ScopedMemory`, what the memory tools call) in the scope
``{"tenant": "t0", "user": "me"}`` (100 records of its own):

* **search**: ``ScopedMemory.search`` for ``store_bench``'s query (two mid-frequency
  words and a rare one);
* **save**: ``ScopedMemory.remember`` of a new sentence: the duplicate-check search
  (``recallstore._dedupe``), then the write with its content key;
* **list**: ``ScopedMemory.search()`` with no query: the scope's newest 10;
* **supersede**: ``remember(..., supersedes=<a record saved earlier>)``.

Rounds alternate a **live** block and a **quiet** block, each running the four
operations once (each after a random pause of up to one writer interval, so an
operation lands anywhere between two writes). During a live block a background task
writes one record at a time to other users' scopes at ``--rate`` writes per second;
during a quiet block it is paused (its write in flight finished first). Same store,
same operations, alternated, so machine noise hits both alike. The **floors** (SQLite
only) replay, on a plain DB-API and an aiosqlite connection to the same file with the
store's PRAGMAs and SQLite module,
the read statements the store ran for an untimed twin of the operation (traced as in
``store_bench.py``), in the quiet block: the same SQL without the store around it.

The table gives each operation's p50/p95, live and quiet, their ratio (target: ≤ 1.5×
for search and save) and the floor; then the live operations split by whether a write
of another user was in flight when they started (one connection: they wait for its
commit); then, across sizes, each operation's live p50 at a
size over its quiet p50 at the first size (the issue's 10M-live against 1M-quiet: run
``--sizes 1000000,10000000``), the load rate and the bytes a record takes.

    .venv/bin/python benchmarks/live_workload.py [--sizes 100000,1000000] [--rate 100]
        [--rounds 200] [--backend sqlite|postgres] [--postgres URL] [--keep FOLDER]

``--backend postgres`` creates a fresh database on the server of ``--postgres``
(default ``postgresql://postgres@127.0.0.1:5432/``) for each size and drops it after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite
from store_bench import PRAGMAS, TENANTS, Corpus, Trace

from recallstore import ScopedMemory
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemoryWriteInput
from recallstore.store import MemoryStore

BATCH = 1_000
MINE = 100
SCOPE = {"tenant": "t0", "user": "me"}
OPERATIONS = ("search", "save", "list", "supersede")
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/"


@dataclass
class Sizes:
    """Timings of one store size, in seconds, per operation and phase."""

    records: int
    load_rate: float = 0.0
    bytes_per_record: float = 0.0
    writes_per_second: float = 0.0
    live: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPERATIONS})
    behind: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPERATIONS})
    """The live operations that started while another user's write was in flight."""
    quiet: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPERATIONS})
    sqlite3: dict[str, list[float]] = field(default_factory=dict)
    aiosqlite: dict[str, list[float]] = field(default_factory=dict)


def p50(times: list[float]) -> float:
    return statistics.median(times) * 1000 if times else float("nan")


def p95(times: list[float]) -> float:
    if not times:
        return float("nan")
    ordered = sorted(times)
    return ordered[int(0.95 * (len(ordered) - 1))] * 1000


class Writers:
    """Other users' agents: one record at a time, ``rate`` a second, while running."""

    def __init__(self, store: MemoryStore, corpus: Corpus, rate: float) -> None:
        self._store, self._corpus, self._interval = store, corpus, 1 / rate
        self._running = asyncio.Event()
        self._busy = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.written = 0
        self.seconds = 0.0

    def _other(self) -> MemoryWriteInput:
        scope = self._corpus.scope()
        return MemoryWriteInput(scope=scope, content=self._corpus.sentence())

    async def _run(self) -> None:
        while True:
            await self._running.wait()
            started = time.perf_counter()
            due = started
            while self._running.is_set():
                async with self._busy:
                    await self._store.write([self._other()])
                self.written += 1
                due += self._interval
                await asyncio.sleep(max(due - time.perf_counter(), 0))
            self.seconds += time.perf_counter() - started

    @property
    def writing(self) -> bool:
        """Whether a write is in flight (an operation started now may wait for it)."""
        return self._busy.locked()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    def resume(self) -> None:
        self._running.set()

    async def pause(self) -> None:
        """Stop writing; returns once the write in flight (if any) has committed."""
        self._running.clear()
        async with self._busy:
            pass

    async def stop(self) -> None:
        await self.pause()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class Floor:
    """The read statements of an untimed twin call, replayed through a plain sqlite3
    and an aiosqlite connection to the store's file."""

    def __init__(
        self, store: SqliteMemoryStore, sync: sqlite3.Connection, conn: aiosqlite.Connection
    ) -> None:
        self._trace = Trace(store)
        self._sync, self._conn = sync, conn

    @classmethod
    async def open(cls, store: SqliteMemoryStore) -> Floor:
        # The store's own SQLite module: two SQLite libraries in one process do not see
        # each other's locks on one file.
        driver = store._driver
        sync = driver.module.connect(str(store.path), isolation_level=None, check_same_thread=False)
        conn = await driver.connect(store.path, isolation_level=None)
        for pragma in PRAGMAS:
            sync.execute(pragma)
            await conn.execute(pragma)
        return cls(store, sync, conn)

    async def close(self) -> None:
        self._sync.close()
        await self._conn.close()

    async def time(self, call: Callable[[], Awaitable[object]]) -> tuple[float, float]:
        """Seconds the twin's reads take through sqlite3 and through aiosqlite."""
        statements = await self._trace.of(call)
        reads = [sql for sql in statements if sql.lstrip().upper().startswith(("SELECT", "WITH"))]
        started = time.perf_counter()
        for sql in reads:
            self._sync.execute(sql).fetchall()
        middle = time.perf_counter()
        for sql in reads:
            await self._conn.execute_fetchall(sql)
        return middle - started, time.perf_counter() - middle


async def load(store: MemoryStore, corpus: Corpus, records: int) -> float:
    """``records`` of the corpus in batches of :data:`BATCH`; records per second."""
    started = time.perf_counter()
    for start in range(0, records, BATCH):
        await store.write(corpus.inputs(min(BATCH, records - start)))
    return records / (time.perf_counter() - started)


class Conversation:
    """The four operations of one conversation, on fresh arguments each time."""

    def __init__(self, memory: ScopedMemory, corpus: Corpus, seed: int) -> None:
        self.memory, self._corpus = memory, corpus
        self._rng = random.Random(seed)
        self._saved: list[str] = []

    def call(self, operation: str) -> Callable[[], Awaitable[object]]:
        """A call of ``operation`` with its own arguments (a twin gets others alike)."""
        memory = self.memory
        if operation == "search":
            text = self._corpus.query()
            return lambda: memory.search(text)
        if operation == "list":
            return lambda: memory.search(limit=10)
        content = f"{self._corpus.sentence()} {uuid.uuid4().hex[:8]}"
        if operation == "save":

            async def save() -> None:
                record, already = await memory.remember(content)
                assert not already
                self._saved.append(record.id)

            return save
        old = self._saved.pop(self._rng.randrange(len(self._saved)))

        async def supersede() -> None:
            record, _ = await memory.remember(content, supersedes=old)
            self._saved.append(record.id)

        return supersede


async def measure(
    store: MemoryStore, sizes: Sizes, args: argparse.Namespace, floor: Floor | None
) -> None:
    corpus = Corpus(max(sizes.records // 100, 1), seed=args.seed)
    if await _count_of(store) >= sizes.records:
        sizes.load_rate = float("nan")  # a kept file (--keep), loaded by an earlier run
    else:
        sizes.load_rate = await load(store, corpus, sizes.records)
    mine = [MemoryWriteInput(scope=SCOPE, content=corpus.sentence()) for _ in range(MINE)]
    conversation = Conversation(ScopedMemory(store, SCOPE, conversation_id="c1"), corpus, 1)
    conversation._saved.extend(record.id for record in await store.write(mine))
    writers = Writers(store, Corpus(max(sizes.records // 100, 1), seed=args.seed + 1), args.rate)
    rng = random.Random(args.seed)
    writers.start()
    try:
        for operation in OPERATIONS:  # warm: page cache, statements, the model of each call
            await conversation.call(operation)()
        for round_ in range(args.rounds):
            # Live first on even rounds, quiet first on odd ones.
            for live in (round_ % 2 == 0, round_ % 2 == 1):
                if live:
                    writers.resume()
                else:
                    await writers.pause()
                timings = sizes.live if live else sizes.quiet
                for operation in OPERATIONS:
                    await asyncio.sleep(rng.random() / args.rate)
                    call = conversation.call(operation)
                    overlapped = writers.writing
                    started = time.perf_counter()
                    await call()
                    timings[operation].append(time.perf_counter() - started)
                    if live and overlapped:
                        sizes.behind[operation].append(timings[operation][-1])
                    if floor is not None and not live and operation in ("search", "list"):
                        plain, threaded = await floor.time(conversation.call(operation))
                        sizes.sqlite3.setdefault(operation, []).append(plain)
                        sizes.aiosqlite.setdefault(operation, []).append(threaded)
            await writers.pause()
    finally:
        await writers.stop()
    sizes.writes_per_second = writers.written / max(writers.seconds, 1e-9)


async def run_sqlite(folder: Path, sizes: Sizes, args: argparse.Namespace) -> None:
    path = folder / f"live-{sizes.records}.db"
    async with SqliteMemoryStore(path, sqlite_driver=args.sqlite_driver) as store:
        floor = await Floor.open(store)
        try:
            await measure(store, sizes, args, floor)
        finally:
            await floor.close()
        count = await _count(store)
    sizes.bytes_per_record = _on_disk(folder, path.name) / count


def _on_disk(folder: Path, name: str) -> int:
    """Bytes of the database file and its WAL (after the store closed: none)."""
    return sum(part.stat().st_size for part in folder.glob(f"{name}*"))


async def _count(store: SqliteMemoryStore) -> int:
    assert store._conn is not None
    ((count,),) = await store._conn.execute_fetchall("SELECT count(*) FROM memory_records")
    return int(count)


async def _count_of(store: MemoryStore) -> int:
    """The records of a kept SQLite file (0 for any other store: it is always new)."""
    return await _count(store) if isinstance(store, SqliteMemoryStore) else 0


@contextlib.asynccontextmanager
async def fresh_database(url: str) -> AsyncIterator[str]:
    """A new, empty database on ``url``'s server, dropped afterwards; yields its URL."""
    import psycopg

    name = f"live_{uuid.uuid4().hex[:10]}"
    base = url.rstrip("/")
    server, _, _ = base.rpartition("/") if base.count("/") > 2 else (base, "", "")
    async with await psycopg.AsyncConnection.connect(f"{server}/postgres", autocommit=True) as c:
        await c.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{server}/{name}"
    finally:
        async with await psycopg.AsyncConnection.connect(
            f"{server}/postgres", autocommit=True
        ) as c:
            await c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


async def run_postgres(sizes: Sizes, args: argparse.Namespace) -> None:
    from recallstore.backends.postgres import PostgresMemoryStore

    async with fresh_database(args.postgres) as url:
        async with PostgresMemoryStore(url) as store:
            await measure(store, sizes, args, None)
        import psycopg

        async with await psycopg.AsyncConnection.connect(url) as conn:
            cursor = await conn.execute(
                "SELECT pg_database_size(current_database()), "
                "(SELECT count(*) FROM recallstore.memory_records)"
            )
            row: Any = await cursor.fetchone()
            sizes.bytes_per_record = row[0] / row[1]


def report(backend: str, results: list[Sizes], args: argparse.Namespace) -> None:
    print(
        f"\n{backend}: {args.rounds} rounds, live and quiet alternated; writers at "
        f"{args.rate:g}/s to other users during live blocks; scope {SCOPE} "
        f"({MINE} records at the start); {TENANTS} tenants, records / 100 users"
    )
    print(
        "| records | operation | quiet p50 ms | quiet p95 ms | live p50 ms | live p95 ms "
        "| live / quiet (p50) | sqlite3 p50 ms | aiosqlite p50 ms | quiet / aiosqlite |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for sizes in results:
        for op in OPERATIONS:
            quiet, live = p50(sizes.quiet[op]), p50(sizes.live[op])
            plain, floor = p50(sizes.sqlite3.get(op, [])), p50(sizes.aiosqlite.get(op, []))
            floors = (
                "— | — | —"
                if floor != floor
                else (f"{plain:.2f} | {floor:.2f} | {quiet / floor:.2f}×")
            )
            print(
                f"| {sizes.records:,} | {op} | {quiet:.2f} | {p95(sizes.quiet[op]):.2f} | "
                f"{live:.2f} | {p95(sizes.live[op]):.2f} | {live / quiet:.2f}× | {floors} |"
            )
    print(
        "\nLive operations that started while another user's write was in flight "
        "(share, their p50) and the others' p50:"
    )
    print("| records | operation | share behind a write | its p50 ms | the others' p50 ms |")
    print("|---|---|---|---|---|")
    for sizes in results:
        for op in OPERATIONS:
            behind = sizes.behind[op]
            others = list(sizes.live[op])
            for one in behind:
                others.remove(one)
            print(
                f"| {sizes.records:,} | {op} | {len(behind) / len(sizes.live[op]):.0%} | "
                f"{p50(behind):.2f} | {p50(others):.2f} |"
            )
    print("\n| records | loaded records/s | writers' writes/s (live) | bytes a record |")
    print("|---|---|---|---|")
    for sizes in results:
        print(
            f"| {sizes.records:,} | {sizes.load_rate:,.0f} | {sizes.writes_per_second:.0f} | "
            f"{sizes.bytes_per_record:,.0f} |"
        )
    if len(results) > 1:
        first = results[0]
        print(f"\nlive p50 at each size over quiet p50 at {first.records:,}:")
        for sizes in results[1:]:
            ratios = ", ".join(
                f"{op} {p50(sizes.live[op]) / p50(first.quiet[op]):.2f}×" for op in OPERATIONS
            )
            print(f"  {sizes.records:,}: {ratios}")


async def run(args: argparse.Namespace) -> None:
    results = []
    for records in args.sizes:
        print(f"{args.backend}: {records:,} records ...", file=sys.stderr, flush=True)
        sizes = Sizes(records)
        if args.backend == "postgres":
            await run_postgres(sizes, args)
        elif args.keep:
            await run_sqlite(Path(args.keep), sizes, args)
        else:
            with tempfile.TemporaryDirectory(prefix="recallstore-live-", dir=args.dir) as tmp:
                await run_sqlite(Path(tmp), sizes, args)
        results.append(sizes)
    report(args.backend, results, args)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes must be numbers, got {text!r}") from None
    if not sizes or min(sizes) < BATCH:
        raise argparse.ArgumentTypeError(f"--sizes must be at least {BATCH}, got {text!r}")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=_sizes, default=[100_000, 1_000_000])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, help="the server's URL")
    parser.add_argument("--rate", type=float, default=100.0, help="other users' writes/s")
    parser.add_argument("--rounds", type=int, default=200, help="live and quiet blocks each")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--sqlite-driver", default="auto", help="the store's SQLite driver (default: as shipped)"
    )
    parser.add_argument("--dir", help="where to put the database files (default: the temp dir)")
    parser.add_argument(
        "--keep",
        help="a folder whose live-N.db files are kept and reused: a file that already holds "
        "N records is not loaded again (a 10M store loads in about an hour here)",
    )
    args = parser.parse_args(argv)
    if args.keep and not Path(args.keep).is_dir():
        parser.error(f"--keep {args.keep!r}: no such folder")
    if args.rate <= 0 or args.rounds < 1:
        parser.error(f"--rate and --rounds must be positive, got {args.rate} and {args.rounds}")
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
