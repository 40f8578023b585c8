"""A user-scoped hybrid search with the default embedder, by the scope's size, beside a
numpy brute-force floor (SQLite).

One store holds one user per scope size (``--sizes``, 100 to 20,000 records by default)
in one tenant, plus ``--others`` records of other users, written with the default
embedder's name and dimension. As in semantic_bench.py, the records' vectors are made
once by the real model for a pool of ``--pool`` sentences and each record gets the pool
vector its text hashes to (what a search costs once the vectors exist does not depend on
which vector a record has); each query's vector is made by the real model **inside**
each timed search.

The floor, for the same query and scope: the query embedded by the same model, then the
scope's vectors (a numpy matrix held in memory, built untimed) multiplied by it and the
20 best picked (``argpartition``) — a brute-force nearest-neighbour search that reads
nothing from the file and ranks no keywords. Each round draws its queries once and times
the same ones at every size, :data:`BLOCK` at a time, going through the sizes in turn.
For each size the store's searches and the floor's run as two blocks of those queries,
the block that goes first alternating, with a pause of :data:`SETTLE` seconds before
each: numpy's matrix product wakes OpenBLAS's threads, which then spin for about 0.1 s
of a core after every product (measured here: 104 ms of CPU in a 0.2 s sleep), so a
store search timed right after a floor query ran with one core where a user's process
has two. ``--alternate`` times them query by query instead, as this script did before,
to show that. The ratio is of the two p50s in the same run; ``--rounds`` repeats the
whole curve, and a last row per size takes every round's calls together. Each call's CPU
time (``time.process_time``: every thread of this process, the embedding's included) is
reported too: on a shared machine it moves far less with the load than the wall clock
does.

    .venv/bin/python benchmarks/hybrid_scope_curve.py [--sizes 100 500 ... 20000]
        [--queries 200] [--rounds 2] [--others 20000] [--alternate]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from search_bench import summary
from store_bench import Corpus

import recallstore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.embedding import QueryEmbedder, default_embedder
from recallstore.records import MemorySearchQuery, MemoryWriteInput

SIZES = [100, 500, 1_000, 2_000, 5_000, 6_000, 10_000, 20_000]
TENANT = "t0"
BATCH = 1_000
SETTLE = 0.2
"""Seconds of pause before each timed block: longer than OpenBLAS's threads spin."""
BLOCK = 10
"""Queries a size is timed with before the next size's turn."""

Timings = dict[tuple[str, int], list[float]]
"""Seconds per call, by (side, scope size)."""


class PooledEmbedder:
    """The default embedder's name and queries; records get pool vectors by hash."""

    def __init__(self, model: QueryEmbedder, pool: Any) -> None:
        self.name = model.name
        self.dimension = model.dimension
        self._model = model
        self._pool = pool

    def rows(self, texts: Sequence[str]) -> list[int]:
        return [zlib.crc32(text.encode()) % len(self._pool) for text in texts]

    async def embed(self, texts: Sequence[str]) -> Any:
        return self._pool[self.rows(texts)]

    async def embed_queries(self, texts: Sequence[str]) -> Any:
        return await self._model.embed_queries(texts)

    def embed_now(self, texts: Sequence[str], *, queries: bool = False) -> Any:
        """As the default embedder offers it (so the store embeds queries as with it)."""
        return (
            self._model.embed_now(texts, queries=True) if queries else self._pool[self.rows(texts)]
        )


async def build(
    store: SqliteMemoryStore, embedder: PooledEmbedder, sizes: Sequence[int], others: int
) -> dict[str, Any]:
    """Write each size's user and the other users' records, interleaved; return each
    size's scope vectors (unit float32 rows) for the floor."""
    corpus = Corpus(1000, seed=7)
    owners = [f"size{size}" for size in sizes for _ in range(size)]
    owners += [f"other{index % 200}" for index in range(others)]
    random.Random(5).shuffle(owners)
    texts: dict[str, list[str]] = {f"size{size}": [] for size in sizes}
    for offset in range(0, len(owners), BATCH):
        batch = []
        for owner in owners[offset : offset + BATCH]:
            content = corpus.sentence()
            if owner in texts:
                texts[owner].append(content)
            batch.append(MemoryWriteInput(scope={"tenant": TENANT, "user": owner}, content=content))
        await store.write(batch)
    pool = embedder._pool
    return {owner: np.ascontiguousarray(pool[embedder.rows(ts)]) for owner, ts in texts.items()}


async def floor(model: QueryEmbedder, matrix: Any, text: str, n: int) -> list[int]:
    """The brute-force nearest ``n`` rows of ``matrix`` to ``text``'s embedding."""
    vector = np.asarray((await model.embed_queries([text]))[0], dtype=np.float32)
    scores = matrix @ vector
    k = min(n, len(scores))
    best = np.argpartition(-scores, k - 1)[:k]
    return [int(row) for row in best[np.argsort(-scores[best], kind="stable")]]


async def run(args: argparse.Namespace) -> None:
    model = default_embedder()
    assert isinstance(model, QueryEmbedder)
    corpus = Corpus(1000, seed=7)
    started = time.perf_counter()
    pool = np.asarray(await model.embed([corpus.sentence() for _ in range(args.pool)]))
    embedder = PooledEmbedder(model, pool.astype(np.float32))
    total = sum(args.sizes) + args.others
    print(
        f"{total:,} records: one user per scope size, {args.others:,} of 200 other users; "
        f"{args.pool} pool vectors made by the model in {time.perf_counter() - started:.1f} s; "
        f"{args.queries} queries a size, {args.rounds} rounds; recallstore from "
        f"{Path(recallstore.__file__).parent}"
    )
    with tempfile.TemporaryDirectory(prefix="recallstore-curve-") as tmp:
        async with SqliteMemoryStore(
            Path(tmp) / "curve.db", journal=None, embedder=embedder
        ) as store:
            started = time.perf_counter()
            matrices = await build(store, embedder, args.sizes, args.others)
            print(f"built in {time.perf_counter() - started:.1f} s")
            rng = random.Random(9)
            questions = [corpus.query() for _ in range(args.queries)]
            for text in questions[:10]:  # model and caches warm
                for size in args.sizes:
                    scope = {"tenant": TENANT, "user": f"size{size}"}
                    await store.search(MemorySearchQuery(query=text, scope=scope, limit=10))
                    await floor(model, matrices[f"size{size}"], text, 20)
            print(
                f"{'round':>5s} {'scope':>7s} {'store p50 ms':>13s} {'floor p50 ms':>13s} "
                f"{'ratio':>6s} {'store p95 ms':>13s} {'store CPU ms':>13s} "
                f"{'floor CPU ms':>13s} {'CPU ratio':>9s}"
            )
            every: tuple[Timings, Timings] = ({}, {})
            for round_ in range(1, args.rounds + 1):
                took, cpu = await timed_round(store, model, matrices, questions, rng, args)
                for kept, new in zip(every, (took, cpu), strict=True):
                    for key, values in new.items():
                        kept.setdefault(key, []).extend(values)
                print_rows(f"{round_:5d}", args.sizes, took, cpu)
            if args.rounds > 1:
                print_rows(f"{'all':>5s}", args.sizes, *every)


def print_rows(label: str, sizes: Sequence[int], took: Timings, cpu: Timings) -> None:
    """One line a size: p50s, ratios and the store's p95."""
    for size in sizes:
        mine, mine95 = summary(took["store", size])
        base, _ = summary(took["floor", size])
        mine_cpu, _ = summary(cpu["store", size])
        base_cpu, _ = summary(cpu["floor", size])
        print(
            f"{label} {size:7,d} {mine:13.2f} {base:13.2f} "
            f"{mine / base:6.2f} {mine95:13.2f} {mine_cpu:13.2f} "
            f"{base_cpu:13.2f} {mine_cpu / base_cpu:9.2f}",
            flush=True,
        )


async def timed_round(
    store: SqliteMemoryStore,
    model: QueryEmbedder,
    matrices: dict[str, Any],
    questions: list[str],
    rng: random.Random,
    args: argparse.Namespace,
) -> tuple[Timings, Timings]:
    """One round's wall and CPU seconds per (side, size). The round's queries are drawn
    once and timed at every size, in blocks of :data:`BLOCK` that go through all the
    sizes in turn: a drift in the machine's speed then reaches every size alike instead
    of the sizes timed last."""
    texts = [questions[rng.randrange(len(questions))] for _ in range(args.queries)]
    took: Timings = {(name, size): [] for name in ("store", "floor") for size in args.sizes}
    cpu: Timings = {key: [] for key in took}
    for block_index, block_start in enumerate(range(0, len(texts), BLOCK)):
        block = texts[block_start : block_start + BLOCK]
        for size_index, size in enumerate(args.sizes):
            scope = {"tenant": TENANT, "user": f"size{size}"}
            matrix = matrices[f"size{size}"]
            # Untimed: gathers the scope's rows again when other sizes pushed them out of
            # the store's copy (SCOPE_COPY_BYTES), which only the first search of a size
            # paid when each size was timed in one stretch.
            await store.search(MemorySearchQuery(query=block[0], scope=scope, limit=10))
            first = ["store", "floor"] if (block_index + size_index) % 2 else ["floor", "store"]
            if args.alternate:
                calls = [
                    (name, text)
                    for i, text in enumerate(block)
                    for name in (first if i % 2 else first[::-1])
                ]
            else:
                calls = [(name, text) for name in first for text in block]
            for index, (name, text) in enumerate(calls):
                if not args.alternate and index % len(block) == 0:
                    await asyncio.sleep(SETTLE)
                begun, spent = time.perf_counter(), time.process_time()
                if name == "store":
                    await store.search(MemorySearchQuery(query=text, scope=scope, limit=10))
                else:
                    await floor(model, matrix, text, 20)
                took[name, size].append(time.perf_counter() - begun)
                cpu[name, size].append(time.process_time() - spent)
    return took, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--queries", type=int, default=200, help="timed per size and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--others", type=int, default=20_000, help="other users' records")
    parser.add_argument("--pool", type=int, default=2_000, help="vectors made by the model")
    parser.add_argument(
        "--alternate", action="store_true", help="store and floor query by query, no pause"
    )
    asyncio.run(run(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
