"""Consolidation of one 10k-record scope with the deterministic proposers, beside plain
writes of the same records.

For each backend (the in-memory reference and SQLite; PostgreSQL with ``--postgres
URL``), in one run: the records are written in batches of 500 into a fresh store
(**write**, the plain-write baseline), then ``consolidate`` makes the plan (**plan**,
a read of the scope and the default proposers: exact and near duplicates),
``apply_plan`` applies it (**apply**: one transaction through the ``"revise"``
extension, one journal event per operation), a second ``consolidate`` checks that only
no-ops are left (**re-plan**), and ``revert_plan`` restores everything (**revert**).
Times are wall seconds of one run each; the ratios are to **write**.

The records: ``--records`` (10,000) statements in one scope; 15 % repeat an earlier
statement with other case and punctuation (exact duplicates), 15 % repeat one with a
filler word added (near duplicates), the rest are distinct. The run's cap is the
record count, so every proposal is kept.

    .venv/bin/python benchmarks/consolidation_bench.py [--records 10000] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.consolidation import apply_plan, consolidate, revert_plan
from recallstore.records import MemoryWriteInput
from recallstore.store import MemoryStore

_SUBJECTS = ["Ana", "Bo", "the user", "her brother", "the team", "my manager", "Kai", "Lena"]
_VERBS = ["likes", "visited", "bought", "plans to see", "wrote about", "asked about", "booked"]
_NOUNS = [
    "Lisbon", "a red bike", "green tea", "the opera", "a vintage camera", "Kyoto", "jazz records",
    "a standing desk", "the marathon", "sourdough bread", "a cello", "the museum", "Porto",
]  # fmt: skip
_WHEN = ["in March", "last week", "on Sunday", "in 2024", "twice", "again", "for work", "alone"]


def statements(count: int, seed: int = 7) -> list[str]:
    """``count`` statements: 70 % distinct, 15 % exact and 15 % near repeats of earlier ones."""
    rng = random.Random(seed)
    texts: list[str] = []
    distinct: list[str] = []
    while len(texts) < count:
        roll = rng.random()
        if distinct and roll < 0.15:
            texts.append(rng.choice(distinct).upper() + ".")
        elif distinct and roll < 0.30:
            texts.append(rng.choice(distinct).replace(" ", " really ", 1))
        else:
            text = " ".join(
                (
                    rng.choice(_SUBJECTS),
                    rng.choice(_VERBS),
                    rng.choice(_NOUNS),
                    rng.choice(_WHEN),
                    f"(note {len(distinct)})",
                )
            )
            distinct.append(text)
            texts.append(text)
    return texts


async def measure(opener: Callable[[], MemoryStore], texts: list[str]) -> dict[str, float]:
    scope = {"tenant": "bench", "user": uuid.uuid4().hex[:12]}
    times: dict[str, float] = {}
    async with opener() as store:
        started = time.perf_counter()
        for offset in range(0, len(texts), 500):
            batch = texts[offset : offset + 500]
            await store.write([MemoryWriteInput(scope=scope, content=text) for text in batch])
        times["write"] = time.perf_counter() - started

        started = time.perf_counter()
        plan = await consolidate(store, scope, cap=len(texts))
        times["plan"] = time.perf_counter() - started
        times["changes"] = len(plan.changes)

        started = time.perf_counter()
        await apply_plan(store, plan)
        times["apply"] = time.perf_counter() - started

        started = time.perf_counter()
        again = await consolidate(store, scope, cap=len(texts))
        times["re-plan"] = time.perf_counter() - started
        if not again.only_noops:
            raise SystemExit(f"a second consolidation proposed {len(again.changes)} changes")

        started = time.perf_counter()
        await revert_plan(store, plan.id)
        times["revert"] = time.perf_counter() - started
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--postgres", metavar="URL", help="also time a PostgreSQL store")
    args = parser.parse_args(argv)
    texts = statements(args.records)
    folder = Path(tempfile.mkdtemp(prefix="recallstore-consolidation-"))
    openers: dict[str, Callable[[], MemoryStore]] = {
        "memory": InMemoryMemoryStore,
        "sqlite": lambda: SqliteMemoryStore(folder / "bench.db"),
    }
    if args.postgres:
        from recallstore.backends.postgres import PostgresMemoryStore

        schema = f"bench_{uuid.uuid4().hex[:8]}"
        openers["postgres"] = lambda: PostgresMemoryStore(args.postgres, schema=schema)
    print(f"{args.records:,} records in one scope; load average {os.getloadavg()}")
    print(f"{'backend':<9} {'write s':>8} {'plan s':>8} {'apply s':>8} {'re-plan s':>9} "
          f"{'revert s':>9} {'changes':>8} {'plan+apply / write':>19}")  # fmt: skip
    for name, opener in openers.items():
        t = asyncio.run(measure(opener, texts))
        ratio = (t["plan"] + t["apply"]) / t["write"]
        print(
            f"{name:<9} {t['write']:>8.2f} {t['plan']:>8.2f} {t['apply']:>8.2f} "
            f"{t['re-plan']:>9.2f} {t['revert']:>9.2f} {int(t['changes']):>8} {ratio:>18.2f}x"
        )
    if args.postgres:
        import psycopg

        with psycopg.connect(args.postgres, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
