"""LoCoMo through the public API on Postgres beside SQLite, interleaved query by query.

The LoCoMo dev split is written into a SQLite file and a throw-away Postgres schema;
then every question with evidence is asked of both, one after the other, so load on a
shared machine hits both alike. Prints each backend's search p50/p99 and recall@10
(categories 1-4), the p50 ratio (issue 30's bar: Postgres at most 2x SQLite) and how
many questions got different hits (0: results unchanged across backends).

    .venv/bin/python benchmarks/postgres_side.py [--postgres URL] [--data PATH]

Skips cleanly (exit 0) when the data file is absent or the server unreachable.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from locomo_recall import DEFAULT_DATA, DEFAULT_POSTGRES, load_locomo

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery
from recallstore.store import MemoryStore

_WARM = 50


def _quantiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return 1000 * statistics.median(ordered), 1000 * ordered[int(0.99 * (len(ordered) - 1))]


async def run(data: Path, dsn: str) -> int:
    import psycopg

    from recallstore.backends.postgres import PostgresMemoryStore

    inputs, questions, _ = load_locomo(data)
    asked = [q for q in questions if q.category != 5]
    queries = [MemorySearchQuery(query=q.text, scope={"sample": q.sample}) for q in asked]
    schema = f"side_{uuid.uuid4().hex[:12]}"
    try:
        async with await psycopg.AsyncConnection.connect(dsn, connect_timeout=5):
            pass
    except psycopg.Error as exc:
        print(f"skipped: PostgreSQL unreachable ({exc})")
        return 0
    with tempfile.TemporaryDirectory(prefix="recallstore-side-") as tmp:
        stores: dict[str, MemoryStore] = {
            "sqlite": SqliteMemoryStore(Path(tmp) / "memory.db"),
            "postgres": PostgresMemoryStore(dsn, schema=schema),
        }
        try:
            async with stores["sqlite"], stores["postgres"]:
                for store in stores.values():
                    for offset in range(0, len(inputs), 200):
                        await store.write(inputs[offset : offset + 200])
                for query in queries[:_WARM]:
                    for store in stores.values():
                        await store.search(query)
                times: dict[str, list[float]] = {name: [] for name in stores}
                recall: dict[str, list[float]] = {name: [] for name in stores}
                differ = 0
                for question, query in zip(asked, queries, strict=True):
                    seen: list[list[str]] = []
                    for name, store in stores.items():
                        started = time.perf_counter()
                        hits = await store.search(query)
                        times[name].append(time.perf_counter() - started)
                        # Ids differ by store: compare the contents, in rank order.
                        seen.append([hit.record.content for hit in hits])
                        found = {
                            hit.record.payload["dia_id"]
                            for hit in hits
                            if isinstance(hit.record.payload, dict)
                        }
                        recall[name].append(len(found & question.evidence) / len(question.evidence))
                    differ += int(seen[0] != seen[1])
        finally:
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    p50 = {}
    for name in stores:
        p50[name], p99 = _quantiles(times[name])
        mean_recall = sum(recall[name]) / len(recall[name])
        print(f"{name:9} p50 {p50[name]:6.2f} ms  p99 {p99:6.2f} ms  R@10 (1-4) {mean_recall:.3f}")
    print(
        f"{len(queries)} questions; postgres/sqlite p50 {p50['postgres'] / p50['sqlite']:.2f}x;"
        f" questions with different hits: {differ}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, help="server URL")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"skipped: LoCoMo data not found at {args.data}")
        return 0
    return asyncio.run(run(args.data, args.postgres))


if __name__ == "__main__":
    sys.exit(main())
