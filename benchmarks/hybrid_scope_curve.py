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
nothing from the file and ranks no keywords. The store's search and the floor alternate
query by query (the order alternating too), so both see the same machine; the ratio is
of their p50s in the same run. ``--rounds`` repeats the whole curve. Each call's CPU
time (``time.process_time``: every thread of this process, the embedding's included)
is reported too: on a shared machine it moves far less with the load than the wall
clock does.

    .venv/bin/python benchmarks/hybrid_scope_curve.py [--sizes 100 500 ... 20000]
        [--queries 60] [--rounds 2] [--others 20000]
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
            for round_ in range(1, args.rounds + 1):
                for size in args.sizes:
                    scope = {"tenant": TENANT, "user": f"size{size}"}
                    matrix = matrices[f"size{size}"]
                    took: dict[str, list[float]] = {"store": [], "floor": []}
                    cpu: dict[str, list[float]] = {"store": [], "floor": []}
                    order = ["store", "floor"]
                    for index in range(args.queries):
                        text = questions[rng.randrange(len(questions))]
                        query = MemorySearchQuery(query=text, scope=scope, limit=10)
                        for name in order if index % 2 else order[::-1]:
                            begun, spent = time.perf_counter(), time.process_time()
                            if name == "store":
                                await store.search(query)
                            else:
                                await floor(model, matrix, text, 20)
                            took[name].append(time.perf_counter() - begun)
                            cpu[name].append(time.process_time() - spent)
                    mine, mine95 = summary(took["store"])
                    base, _ = summary(took["floor"])
                    mine_cpu, _ = summary(cpu["store"])
                    base_cpu, _ = summary(cpu["floor"])
                    print(
                        f"{round_:5d} {size:7,d} {mine:13.2f} {base:13.2f} "
                        f"{mine / base:6.2f} {mine95:13.2f} {mine_cpu:13.2f} "
                        f"{base_cpu:13.2f} {mine_cpu / base_cpu:9.2f}",
                        flush=True,
                    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--queries", type=int, default=60, help="timed per size and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--others", type=int, default=20_000, help="other users' records")
    parser.add_argument("--pool", type=int, default=2_000, help="vectors made by the model")
    asyncio.run(run(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
