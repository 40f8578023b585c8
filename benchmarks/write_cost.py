"""What a write costs in CPU time and bytes written, figures that a busy machine barely moves.

Wall-clock rates (``store_bench.py``) swing several-fold when other work shares the
cores; CPU time per record (both threads: the event loop's Python and SQLite's work on
aiosqlite's thread) and bytes the process sent to the disk per record (``/proc``, Linux
only) do not, so two trees can be compared on a loaded machine. Batch writes of
1,000 records up to ``--records``, then 64 single-record writers x 20 calls.

    .venv/bin/python benchmarks/write_cost.py [--records 100000] [--observed]

``--observed`` gives every input an ``observed_at`` a few days before the write (an
imported conversation), the case where a record stores its observed time beside the
save's, in ``memory_records`` and (schema version 10) in each of its scope rows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from store_bench import WRITERS, Corpus

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemoryWriteInput

ROUNDS = 20


def written_bytes() -> int:
    """Bytes this process caused to be sent to the storage layer."""
    with open(f"/proc/{os.getpid()}/io") as stats:
        fields = dict(line.split(": ") for line in stats.read().splitlines())
    return int(fields["write_bytes"])


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sample() -> tuple[float, float, int]:
    return time.perf_counter(), cpu_seconds(), written_bytes()


def line(
    name: str, count: int, start: tuple[float, float, int], end: tuple[float, float, int]
) -> str:
    wall, cpu, disk = (b - a for a, b in zip(start, end, strict=True))
    return (
        f"{name:<12}{count / wall:>10,.0f} records/s wall{cpu / count * 1e6:>9.1f} µs CPU/record"
        f"{disk / count / 1024:>8.1f} KiB written/record"
    )


def dated(inputs: list[MemoryWriteInput], observed: bool) -> list[MemoryWriteInput]:
    """``inputs``, each observed some days ago when ``observed`` asks for it."""
    if not observed:
        return inputs
    now = datetime.now(UTC)
    return [
        inp.model_copy(update={"observed_at": now - timedelta(days=1 + n % 300)})
        for n, inp in enumerate(inputs)
    ]


async def run(records: int, folder: Path, observed: bool = False) -> None:
    corpus = Corpus(users=max(records // 100, 1))
    batches = [dated(corpus.inputs(1000), observed) for _ in range(records // 1000)]
    singles = [dated(corpus.inputs(ROUNDS), observed) for _ in range(WRITERS)]
    async with SqliteMemoryStore(
        folder / "store.db", journal=None, sqlite_driver="stdlib"
    ) as store:
        start = sample()
        for batch in batches:
            await store.write(batch)
        loaded = sample()

        async def writer(mine: list[MemoryWriteInput]) -> None:
            for inp in mine:
                await store.write([inp])

        await asyncio.gather(*(writer(mine) for mine in singles))
        end = sample()
    print(f"\n{records:,} records{' observed before the write' if observed else ''}")
    print(line("batch write", records, start, loaded))
    print(line(f"{WRITERS} writers", WRITERS * ROUNDS, loaded, end))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[100_000])
    parser.add_argument("--observed", action="store_true", help="inputs dated in the past")
    args = parser.parse_args()
    for records in args.records:
        with tempfile.TemporaryDirectory(prefix="recallstore-bench-") as tmp:
            asyncio.run(run(records, Path(tmp), args.observed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
