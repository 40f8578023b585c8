"""Deleting from SqliteMemoryStore, per SQLite driver, beside its floors.

For each size and each SQLite driver available (the standard library's, and the
``sqlite`` extra's with FTS5 secure-delete), on a copy of one built file:

* **delete**: one ``delete(id)`` of a random record, p50 over ``--deletes`` calls;
* **forget**: ``forget(scope)`` of a ``--forget-size``-record scope, p50 over
  ``--forgets`` scopes (written, untimed, just before).

Floors, measured in the same run on the same file, alternating with the store's calls:
the store's own statements (``sqlite.delete``) in one ``BEGIN IMMEDIATE … COMMIT``
then ``PRAGMA wal_checkpoint(TRUNCATE)`` — what the store does so the words leave the
``-wal`` file too — through a plain connection of the same driver module, and
statement by statement through aiosqlite over it.

The built file is kept with ``--reuse DIR`` (``base-<records>.db``, built by the first
run; a 1M build takes many minutes), and each driver works on a fresh copy of it.
Sizes are records in 10 tenants and ``records / 100`` users, as in store_bench.py.

    .venv/bin/python benchmarks/delete_bench.py                      # 100k
    nice -n 5 .venv/bin/python benchmarks/delete_bench.py --records 100000 1000000 \\
        --reuse /tmp/recallstore-delete-bench                        # 1M, built once
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from store_bench import RECORDS_PER_USER, TENANTS, Corpus

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.delete import delete_now, forget_now
from recallstore.backends.sqlite.driver import SqliteDriver, choose_sqlite
from recallstore.records import MemoryWriteInput

_PRAGMAS = [
    "PRAGMA synchronous = FULL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA secure_delete = ON",
    "PRAGMA busy_timeout = 10000",
]


async def build(path: Path, records: int, batch: int = 1_000) -> None:
    corpus = Corpus(users=max(records // RECORDS_PER_USER, 1))
    started = time.perf_counter()
    async with SqliteMemoryStore(path, journal=None, sqlite_driver="stdlib") as store:
        for offset in range(0, records, batch):
            await store.write(corpus.inputs(min(batch, records - offset)))
    took = time.perf_counter() - started
    print(f"built {records:,} records in {took:.0f} s: {path}", file=sys.stderr, flush=True)


def p50_ms(samples: list[float]) -> float:
    return 1000 * statistics.median(samples)


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


def sync_floor(db: Any, function: Callable[..., object], *args: Any) -> float:
    """The store's statement function in one write transaction, then the WAL scrub."""
    started = time.perf_counter()
    db.execute("BEGIN IMMEDIATE")
    function(db, *args)
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    return time.perf_counter() - started


async def async_floor(conn: Any, statements: list[tuple[str, Any]]) -> float:
    """The same statements, each its own aiosqlite call."""
    started = time.perf_counter()
    for sql, params in statements:
        if isinstance(params, list):
            await conn.executemany(sql, params)
        else:
            await conn.execute_fetchall(sql, params)
    return time.perf_counter() - started


def delete_statements(record_id: str, merge: bool) -> list[tuple[str, Any]]:
    return [
        ("BEGIN IMMEDIATE", ()),
        ("DELETE FROM memory_records WHERE id = ?", (record_id,)),
        *([("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')", ())] if merge else []),
        ("COMMIT", ()),
        ("PRAGMA wal_checkpoint(TRUNCATE)", ()),
    ]


def forget_statements(seqs: list[int], scope: dict[str, str], merge: bool) -> list[tuple[str, Any]]:
    pair = "SELECT record_seq FROM memory_scope WHERE key = ? AND value = ?"
    return [
        ("BEGIN IMMEDIATE", ()),
        (
            "SELECT seq, id, kind FROM memory_records WHERE seq IN "
            f"({' INTERSECT '.join([pair] * len(scope))}) ORDER BY seq",
            [part for item in scope.items() for part in item],
        ),
        (
            f"DELETE FROM memory_records WHERE seq IN ({' INTERSECT '.join([pair] * len(scope))})",
            tuple(part for item in scope.items() for part in item),
        ),
        *([("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')", ())] if merge else []),
        ("COMMIT", ()),
        ("PRAGMA wal_checkpoint(TRUNCATE)", ()),
    ]


def fixed_select(statements: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    # execute_fetchall takes a tuple of parameters; the SELECT's list is its parameters.
    return [(sql, tuple(p) if sql.startswith("SELECT") else p) for sql, p in statements]


async def bench_driver(
    path: Path, driver: SqliteDriver, args: argparse.Namespace
) -> list[tuple[str, float, float, float, str]]:
    rng = random.Random(11)
    merge = not driver.secure_delete
    sync = driver.module.connect(str(path), isolation_level=None, check_same_thread=False)
    conn = await driver.connect(path, isolation_level=None)
    for pragma in _PRAGMAS:
        sync.execute(pragma)
        await conn.execute(pragma)
    ids = [row[0] for row in sync.execute("SELECT id FROM memory_records")]
    rng.shuffle(ids)
    figures = []
    try:
        async with SqliteMemoryStore(path, journal=None, sqlite_driver=driver.name) as store:
            samples: list[list[float]] = [[], [], []]
            for _ in range(args.deletes):
                mine, for_sync, for_async = ids.pop(), ids.pop(), ids.pop()
                samples[0].append(await timed(lambda m=mine: store.delete(m)))  # type: ignore[misc]
                samples[1].append(sync_floor(sync, delete_now, for_sync, merge))
                samples[2].append(await async_floor(conn, delete_statements(for_async, merge)))
            figures.append(("delete", *map(p50_ms, samples), "≤ 20 ms at 1M"))
            samples = [[], [], []]
            for round_ in range(args.forgets):
                scopes = [{"tenant": "forget", "user": f"f{round_}-{who}"} for who in range(3)]
                for scope in scopes:
                    inputs = [
                        MemoryWriteInput(scope=scope, content=f"forget me {n} {scope['user']}")
                        for n in range(args.forget_size)
                    ]
                    await store.write(inputs)
                samples[0].append(
                    await timed(lambda s=scopes[0]: store.forget(s))  # type: ignore[misc]
                )
                samples[1].append(sync_floor(sync, forget_now, scopes[1], merge))
                seqs = [
                    row[0]
                    for row in sync.execute(
                        "SELECT record_seq FROM memory_scope WHERE key = 'user' AND value = ?",
                        (scopes[2]["user"],),
                    )
                ]
                statements = fixed_select(forget_statements(seqs, scopes[2], merge))
                samples[2].append(await async_floor(conn, statements))
            figures.append(
                (f"forget {args.forget_size:,}", *map(p50_ms, samples), "≤ 1,000 ms at 1M")
            )
    finally:
        sync.close()
        await conn.close()
    return figures


def remove_copy(work: Path) -> None:
    for leftover in work.parent.glob(work.name + "*"):
        leftover.unlink()


def drivers(names: list[str] | None) -> list[SqliteDriver]:
    if names:
        return [choose_sqlite(name) for name in names]
    found = [choose_sqlite("stdlib"), choose_sqlite("auto")]
    return found[:1] if found[1].name == "stdlib" else found


async def run(args: argparse.Namespace) -> None:
    keep = Path(args.reuse) if args.reuse else None
    with tempfile.TemporaryDirectory(prefix="recallstore-delete-", dir=args.dir) as tmp:
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for records in args.records:
            base = folder / f"base-{records}.db"
            if not base.exists():
                await build(base, records)
            users = max(records // RECORDS_PER_USER, 1)
            print(f"\n{records:,} records, {TENANTS} tenants, {users:,} users")
            header = (
                f"{'driver':<24}{'measure':<14}{'store':>9}{'sqlite':>9}{'aiosqlite':>11}"
                f"{'×sqlite':>9}{'×aiosqlite':>12}  target"
            )
            print(header)
            print("-" * len(header))
            for driver in drivers(args.drivers):
                work = Path(tmp) / f"work-{records}-{driver.name}.db"
                shutil.copyfile(base, work)
                label = f"{driver.name} {driver.version_text}"
                for name, store, floor, afloor, target in await bench_driver(work, driver, args):
                    print(
                        f"{label:<24}{name:<14}{store:>9.2f}{floor:>9.2f}{afloor:>11.2f}"
                        f"{store / floor:>9.2f}{store / afloor:>12.2f}  {target}",
                        flush=True,
                    )
                remove_copy(work)
    print("\nms p50; ×floor = the store's time over the same SQL's in the same run.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[100_000])
    parser.add_argument("--deletes", type=int, default=30, help="deletes timed per driver")
    parser.add_argument("--forgets", type=int, default=3, help="forgets timed per driver")
    parser.add_argument("--forget-size", type=int, default=1_000, help="records per scope")
    parser.add_argument("--drivers", nargs="+", help="stdlib, pysqlite3, sqlean (default: all)")
    parser.add_argument("--reuse", help="keep and reuse the built files in this folder")
    parser.add_argument("--dir", help="where to put the working copies (default: temp dir)")
    args = parser.parse_args(argv)
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
