"""Broad keyword searches (tenant-wide, unscoped) at two store sizes, with and without
max-score pruning (``backends/sqlite/pruning.py``, issue 38), in one run.

Each size is a store built through the public API with ``store_bench``'s corpus
(``Corpus``: 12-word Zipf sentences, ``TENANTS`` tenants, 100 records a user). For each
size and scope (``{"tenant": "t3"}`` and unscoped) the same queries run with pruning
off (FTS5 ranks every match, the path before it) and on, alternating query by query,
after an untimed run of each; both answers must be the same ids with the same scores
(the script fails otherwise). Two query mixes: ``store_bench``'s (two mid-frequency
words and a rare one) and *common + rare* (one of the 20 most frequent words and a
rare one). Printed per size: p50 / p95 ms off and on, on / off, how many searches the
pruning answered, and the growth from the smallest size to each larger one.

    .venv/bin/python benchmarks/broad_search.py                      # 100k and 1M
    .venv/bin/python benchmarks/broad_search.py --sizes 1000000 10000000 --dir /big
    .venv/bin/python benchmarks/broad_search.py --dir /tmp/broad    # keep the files

With ``--dir``, a file ``broad-<size>.db`` already there is reused (built by this
script with the same seed: the same records).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store_bench import RECORDS_PER_USER, Corpus

from recallstore import MemorySearchQuery
from recallstore.backends.sqlite import SqliteMemoryStore, pruning, ranked

BATCH = 5_000
SCOPES: dict[str, dict[str, str]] = {"tenant-wide": {"tenant": "t3"}, "unscoped": {}}


@dataclass
class Timings:
    """One (size, scope, mix): every query's time with pruning off and on."""

    off: list[float] = field(default_factory=list)
    on: list[float] = field(default_factory=list)
    answered: int = 0


def _p50(times: list[float]) -> float:
    return statistics.median(times) * 1000


def _p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[int(0.95 * (len(ordered) - 1))] * 1000


def _mixes(words: list[str], rng: random.Random) -> dict[str, Callable[[], str]]:
    def bench() -> str:  # store_bench.Corpus.query's shape
        return " ".join([*rng.sample(words[20:500], 2), rng.choice(words[500:])])

    def common_rare() -> str:
        return f"{rng.choice(words[:20])} {rng.choice(words[500:])}"

    return {"store_bench mix": bench, "common + rare": common_rare}


async def _store(size: int, folder: Path, seed: int) -> tuple[SqliteMemoryStore, Corpus]:
    corpus = Corpus(users=max(size // RECORDS_PER_USER, 1), seed=seed)
    path = folder / f"broad-{size}.db"
    built = path.exists()
    store = SqliteMemoryStore(path)
    await store.__aenter__()
    if not built:
        started = time.perf_counter()
        for start in range(0, size, BATCH):
            await store.write(corpus.inputs(min(BATCH, size - start)))
        rate = size / (time.perf_counter() - started)
        print(f"built {size:,} records at {rate:,.0f} records/s", flush=True)
    return store, corpus


class _Counting:
    """``ranked.best_pruned_now`` counting the searches it answered."""

    def __init__(self) -> None:
        self.answered = 0
        self._real = pruning.best_pruned_now

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        found = self._real(*args, **kwargs)
        self.answered += found is not None
        return found


async def _timed(store: SqliteMemoryStore, query: MemorySearchQuery, on: bool) -> tuple[float, Any]:
    pruning._ENABLED = on
    started = time.perf_counter()
    hits = await store.search(query)
    elapsed = time.perf_counter() - started
    return elapsed, [(hit.record.id, hit.score) for hit in hits]


async def measure(
    size: int, folder: Path, queries: int, seed: int
) -> dict[tuple[str, str], Timings]:
    store, corpus = await _store(size, folder, seed)
    counting = _Counting()
    ranked.best_pruned_now = counting  # type: ignore[assignment]
    results: dict[tuple[str, str], Timings] = {}
    try:
        for mix, make in _mixes(corpus.words, random.Random(seed + 1)).items():
            texts = [make() for _ in range(queries)]
            for scope_name, scope in SCOPES.items():
                timings = Timings()
                before = counting.answered
                for index, text in enumerate(texts):
                    query = MemorySearchQuery(query=text, scope=scope, limit=10)
                    await _timed(store, query, on=True)  # untimed: warm both paths' pages
                    order = (False, True) if index % 2 == 0 else (True, False)
                    answers = {}
                    for on in order:
                        elapsed, answers[on] = await _timed(store, query, on)
                        (timings.on if on else timings.off).append(elapsed)
                    if answers[True] != answers[False]:
                        raise SystemExit(f"different answers at {size:,} for {text!r} {scope}")
                timings.answered = (counting.answered - before) // 2
                results[(mix, scope_name)] = timings
    finally:
        ranked.best_pruned_now = pruning.best_pruned_now
        pruning._ENABLED = True
        await store.__aexit__(None, None, None)
    return results


def report(sizes: list[int], measured: dict[int, dict[tuple[str, str], Timings]]) -> None:
    smallest = sizes[0]
    print(
        f"{'mix':<16} {'scope':<12} {'records':>10}  {'off p50/p95 ms':>16}  "
        f"{'on p50/p95 ms':>16}  {'on/off':>6}  {'pruned':>7}  growth off / on"
    )
    for key in measured[smallest]:
        for size in sizes:
            timings = measured[size][key]
            off, on = _p50(timings.off), _p50(timings.on)
            growth = ""
            if size != smallest:
                base = measured[smallest][key]
                growth = f"{off / _p50(base.off):.2f}x / {on / _p50(base.on):.2f}x"
            print(
                f"{key[0]:<16} {key[1]:<12} {size:>10,}  "
                f"{off:>7.2f} /{_p95(timings.off):>7.2f}  {on:>7.2f} /{_p95(timings.on):>7.2f}  "
                f"{on / off:>6.2f}  {timings.answered:>3}/{len(timings.on):<3}  {growth}"
            )


async def main(args: argparse.Namespace) -> None:
    sizes = sorted(args.sizes)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.dir) if args.dir else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        measured = {size: await measure(size, folder, args.queries, args.seed) for size in sizes}
    print(f"=== broad_search.py, {args.queries} queries a scope and mix, limit 10")
    report(sizes, measured)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7, help="the corpus's (store_bench's: 7)")
    parser.add_argument("--dir", help="where the stores are built, or found (default: a temp dir)")
    asyncio.run(main(parser.parse_args()))
