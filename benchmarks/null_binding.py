"""What binding ``None`` costs a batch write: the store's INSERTs against the same rows
with every column bound.

The SQLite store writes a column a record leaves empty as ``NULL`` in the INSERT's
text (``_sqlite_insert.PendingInsert``). Before, every column was bound, ``None``
included, and Python 3.11's ``sqlite3`` spends about a microsecond on each ``None``
it binds: it looks for an adapter, and the failed look-up formats an error message
it then drops. A new record has eight such columns.

Two measures, each alternating the two forms batch by batch in one run:

* **a 16-column table** in memory, 8 of the columns ``None``: the binding alone;
* **the store's tables** in two files made by the store (WAL, ``synchronous=FULL``),
  ``--batch`` records per transaction: the store's statements against the same
  statements with the record row bound whole.

    .venv/bin/python benchmarks/null_binding.py                  # 50,000 records
    .venv/bin/python benchmarks/null_binding.py --records 100000
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from store_bench import PRAGMAS, Corpus, build_rows

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.insert import (
    _OPTIONAL_COLUMNS,
    _REQUIRED_COLUMNS,
    PendingInsert,
    next_seq,
)
from recallstore.backends.sqlite.rows import Statements
from recallstore.store import MonotonicClock

_BOUND_WHOLE = (
    f"INSERT INTO memory_records (seq, {', '.join([*_REQUIRED_COLUMNS, *_OPTIONAL_COLUMNS])}) "
    f"VALUES ({', '.join('?' * (1 + len(_REQUIRED_COLUMNS) + len(_OPTIONAL_COLUMNS)))})"
)


def bound_whole(pending: PendingInsert, first_seq: int) -> Statements:
    """The store's statements with its record INSERTs replaced by one that binds every
    column of the same rows, None where a column is NULL."""
    required = len(_REQUIRED_COLUMNS)
    records = []
    for offset, (nulls, values) in enumerate(zip(pending.nulls, pending.values, strict=True)):
        present = iter(values[required:])
        optional = [None if null else next(present) for null in nulls]
        records.append((first_seq + offset, *values[:required], *optional))
    sides = [
        statement
        for statement in pending.statements(first_seq)
        if "memory_records" not in statement[0]
    ]
    return [(_BOUND_WHOLE, records), *sides]


def binding_alone(rows: int) -> tuple[float, float]:
    """Seconds per row for 16 bound columns with 8 None, and with those 8 as NULL text."""
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE TABLE t ({', '.join(f'c{n}' for n in range(16))})")
    bound = "INSERT INTO t VALUES (" + ", ".join("?" * 16) + ")"
    literal = "INSERT INTO t VALUES (" + ", ".join(["?"] * 8 + ["NULL"] * 8) + ")"
    with_none = [(n, "a", "b", "c", "d", "e", "f", "g", *([None] * 8)) for n in range(rows)]
    without = [row[:8] for row in with_none]
    spent = [0.0, 0.0]
    for _ in range(3):
        for index, (sql, data) in enumerate(((bound, with_none), (literal, without))):
            db.execute("DELETE FROM t")
            started = time.perf_counter()
            db.executemany(sql, data)
            spent[index] += time.perf_counter() - started
    db.close()
    return spent[0] / (3 * rows), spent[1] / (3 * rows)


async def _create(path: Path) -> None:
    async with SqliteMemoryStore(path, journal=None, sqlite_driver="stdlib"):
        pass


def store_tables(folder: Path, records: int, batch: int) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds per record for the two forms, alternating batch by batch."""
    corpus, clock = Corpus(users=max(records // 100, 1)), MonotonicClock()
    forms = ("NULL in the text", "every column bound")
    connections = {}
    for name in forms:
        path = folder / f"{name.split()[0].lower()}.db"
        asyncio.run(_create(path))
        connections[name] = sqlite3.connect(path, isolation_level=None)
        for pragma in PRAGMAS:
            connections[name].execute(pragma)
    spent = {name: [0.0, 0.0] for name in forms}
    for _ in range(records // batch):
        chunk = build_rows(corpus.inputs(batch), clock)
        pending = PendingInsert(chunk)
        for name, db in connections.items():
            db.execute("BEGIN IMMEDIATE")
            first = next_seq(db)
            if name == forms[0]:
                statements = pending.statements(first)
            else:
                statements = bound_whole(pending, first)
            started, cpu = time.perf_counter(), time.thread_time()
            for sql, rows in statements:
                db.executemany(sql, rows)
            db.execute("COMMIT")
            spent[name][0] += time.perf_counter() - started
            spent[name][1] += time.thread_time() - cpu
    for db in connections.values():
        db.close()
    done = records // batch * batch
    return {name: (wall / done, cpu / done) for name, (wall, cpu) in spent.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--dir", help="where to put the database files (default: the temp dir)")
    args = parser.parse_args(argv)
    if args.records < args.batch:
        parser.error("--records must be at least --batch")
    print(f"Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}")
    with_none, literal = binding_alone(100_000)
    print("\n16-column table in memory, 8 columns None, 100,000 rows")
    print(f"{'form':22s} {'µs/row':>8s}")
    print(f"{'8 None bound':22s} {1e6 * with_none:8.2f}")
    print(f"{'8 NULL in the text':22s} {1e6 * literal:8.2f}")
    print(f"bound / text: {with_none / literal:.2f}×")
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        spent = store_tables(Path(folder), args.records, args.batch)
    print(f"\nthe store's tables, {args.records:,} records, {args.batch:,} per transaction")
    print(f"{'form':22s} {'records/s':>10s} {'µs wall':>8s} {'µs CPU':>8s}")
    for name, (wall, cpu) in spent.items():
        print(f"{name:22s} {1 / wall:10,.0f} {1e6 * wall:8.1f} {1e6 * cpu:8.1f}")
    (text_wall, text_cpu), (bound_wall, bound_cpu) = spent.values()
    print(f"bound / text: {bound_wall / text_wall:.2f}× wall, {bound_cpu / text_cpu:.2f}× CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
