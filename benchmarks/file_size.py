"""What each byte of a SQLite store file holds, beside the raw floor (issue 38).

A store is loaded through the public API with ``--records`` records of store_bench.py's
corpus (``records / 100`` users in 10 tenants, 12 words a record, batches of 1,000,
without the event journal, as store_bench.py loads it), then closed (the WAL
checkpointed into the file). SQLite's ``dbstat`` virtual table then says, for every
table and index of the file, how many pages it takes and how many of their bytes are
payload (the rows' own bytes), B-tree overhead (cell headers, pointers) and unused
space, per record.

The floor: the same rows (``memory_records``' columns, copied by ``SELECT``) in one
plain table of a file of its own, no index, no full-text index, no side table: what
storing the records at all costs in SQLite. Also printed: the bytes of the values
themselves (the sum of their lengths), what no file layout can go below.

    .venv/bin/python benchmarks/file_size.py [--records 100000] [--keep FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from store_bench import RECORDS_PER_USER, Corpus

from recallstore.backends.sqlite import SqliteMemoryStore

BATCH = 1_000

_PER_OBJECT = """
    SELECT name, sum(pgsize), sum(payload), sum(unused), sum(ncell), count(*)
    FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC
"""

_WHAT = {
    "memory_records": "the records' rows (content, scope and tags as JSON, timestamps)",
    "sqlite_autoindex_memory_records_1": "id UNIQUE: a record by its public id",
    "memory_records_recency": "(created_at, id): unscoped listings, export pages",
    "memory_records_idempotency": "partial, only records with an idempotency key",
    "memory_scope": "(key, value, created_us, record_seq): scoped search and listings",
    "memory_tags": "tag rows by record (none in this corpus)",
    "memory_tags_by_tag": "tag rows by tag (none in this corpus)",
    "memory_fts_data": "FTS5 index: words' doclists with positions, scope tokens",
    "memory_fts_idx": "FTS5 index: segment directory",
    "memory_fts_docsize": "FTS5: each record's length in tokens per column (bm25)",
    "memory_fts_config": "FTS5 configuration",
    "memory_terms": "each stem's record count (ranking statistics, version 12)",
    "sqlite_schema": "the schema",
}


def _plain_floor(store: Path, floor: Path) -> int:
    """Copy ``memory_records``' columns into one plain table of ``floor``; its size."""
    with sqlite3.connect(floor) as conn:
        columns = [
            row[1] for row in sqlite3.connect(store).execute("PRAGMA table_info(memory_records)")
        ]
        conn.execute("ATTACH DATABASE ? AS store", (str(store),))
        listed = ", ".join(columns)
        conn.execute(f"CREATE TABLE plain AS SELECT {listed} FROM store.memory_records")
        conn.commit()
        conn.execute("DETACH DATABASE store")
    with sqlite3.connect(floor) as conn:
        conn.execute("VACUUM")
    return floor.stat().st_size


def _value_bytes(store: Path) -> int:
    """The sum of the lengths of every stored value of ``memory_records`` (text as UTF-8)."""
    with sqlite3.connect(store) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(memory_records)")]
        lengths = " + ".join(f"coalesce(length(CAST({column} AS BLOB)), 0)" for column in columns)
        (total,) = conn.execute(f"SELECT sum({lengths}) FROM memory_records").fetchone()
    return int(total or 0)


async def load(path: Path, records: int) -> float:
    """Write ``records`` records of the store benchmark's corpus; the seconds taken."""
    corpus = Corpus(users=max(records // RECORDS_PER_USER, 1))
    started = time.perf_counter()
    async with SqliteMemoryStore(path, journal=None, sqlite_driver="stdlib") as store:
        for offset in range(0, records, BATCH):
            await store.write(corpus.inputs(min(BATCH, records - offset)))
    return time.perf_counter() - started


def report(path: Path, records: int, floor: int, values: int) -> None:
    """Print the file's bytes by table and index, per record, beside the floors."""
    size = path.stat().st_size
    with sqlite3.connect(path) as conn:
        (page,) = conn.execute("PRAGMA page_size").fetchone()
        rows = conn.execute(_PER_OBJECT).fetchall()
        (free,) = conn.execute("PRAGMA freelist_count").fetchone()
    print(
        f"file {size / 1e6:.1f} MB, {size / records:.0f} bytes a record; page size {page}; "
        f"free pages {free}"
    )
    print(
        f"floor: the same rows in one plain table {floor / 1e6:.1f} MB "
        f"({floor / records:.0f} bytes a record): file / floor {size / floor:.2f}; "
        f"the values alone {values / 1e6:.1f} MB ({values / records:.0f} bytes a record)"
    )
    print(
        f"{'table or index':36s} {'MB':>7s} {'share':>6s} {'B/rec':>6s} {'payload':>8s} "
        f"{'unused':>7s} {'cells':>9s}  what it holds"
    )
    for name, pgsize, payload, unused, cells, _pages in rows:
        print(
            f"{name:36s} {pgsize / 1e6:7.2f} {pgsize / size:6.1%} {pgsize / records:6.0f} "
            f"{payload / records:8.0f} {unused / records:7.0f} {cells:9,d}  {_WHAT.get(name, '')}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="copy the loaded store file here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="recallstore-size-") as tmp:
        path = Path(tmp) / "store.db"
        took = asyncio.run(load(path, args.records))
        print(f"{args.records:,} records loaded in {took:.1f} s")
        floor = _plain_floor(path, Path(tmp) / "floor.db")
        report(path, args.records, floor, _value_bytes(path))
        if args.keep is not None:
            shutil.copyfile(path, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
