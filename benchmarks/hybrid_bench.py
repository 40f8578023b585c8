"""The cost of hybrid search beside keyword search on the same records (SQLite).

Builds ``--records`` synthetic memories (search_bench's corpus and scopes) twice from
the same seed: a keyword-only store, and a store with an embedder. The embedder here
is the kit's ToyEmbedder at ``--dimension`` (768 by default, the size of all-mpnet-base-v2,
the benchmark's model; 384 for all-MiniLM-L6-v2): what a search costs once the query's
vector exists depends on the size of the vectors, not on the model, and embedding 100k
records with a real model would take the benchmark an hour. Every query's vector is
made before the timing (a cached embedder), so the figures exclude the query's
embedding; benchmarks/hybrid_recall.py reports that time for the real model. Both
stores are open at once and each query runs on both, one right after the other (the
order alternating), so the ratio compares them under the same machine load.

    .venv/bin/python benchmarks/hybrid_bench.py [--records 100000] [--queries 200]
        [--dimension 768]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from _models import CachedEmbedder
from search_bench import TENANTS, build, make_queries, summary, timed
from store_bench import Corpus

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.testing import ToyEmbedder


async def run(records: int, count: int, dimension: int) -> None:
    users = max(records // 100, 1)
    print(
        f"{records:,} records, {users:,} users in {TENANTS} tenants; {count} queries each; "
        f"{dimension}-dimensional vectors"
    )
    embedder = CachedEmbedder(ToyEmbedder(dimension=dimension))
    with tempfile.TemporaryDirectory(prefix="recallstore-hybrid-") as tmp:
        keyword = SqliteMemoryStore(Path(tmp) / "keyword.db", journal=None)
        hybrid = SqliteMemoryStore(Path(tmp) / "hybrid.db", journal=None, embedder=embedder)
        async with keyword, hybrid:
            for name, store in (("keyword", keyword), ("hybrid", hybrid)):
                seconds = await build(store, Corpus(users), records, users)
                print(f"{name}: built in {seconds:.1f} s")
            warm = make_queries(users, count, seed=1)
            timed_queries = make_queries(users, count, seed=2)
            for queries in (*warm.values(), *timed_queries.values()):
                for query in queries:
                    await embedder.embed([query.query or ""])  # vectors made up front
            for queries in warm.values():
                for query in queries:
                    await keyword.search(query)
                    await hybrid.search(query)
            results: dict[str, dict[str, float]] = {}
            for kind, queries in timed_queries.items():
                if "listing" in kind:
                    continue
                # Query by query, alternating which store goes first, so both see the
                # same machine: a shared machine's speed drifts within seconds.
                durations: dict[str, list[float]] = {"keyword": [], "hybrid": []}
                for index, query in enumerate(queries):
                    order = ("keyword", "hybrid") if index % 2 else ("hybrid", "keyword")
                    for name in order:
                        store = keyword if name == "keyword" else hybrid
                        (took,) = await timed([lambda q=query, s=store: s.search(q)])
                        durations[name].append(took)
                results[kind] = {name: summary(values)[0] for name, values in durations.items()}
    print(f"{'search':24s} {'keyword p50 ms':>15s} {'hybrid p50 ms':>15s} {'hybrid/keyword':>15s}")
    for kind, figures in results.items():
        ratio = figures["hybrid"] / figures["keyword"]
        print(f"{kind:24s} {figures['keyword']:15.2f} {figures['hybrid']:15.2f} {ratio:15.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dimension", type=int, default=768, help="the vectors' size")
    args = parser.parse_args(argv)
    asyncio.run(run(args.records, args.queries, args.dimension))
    return 0


if __name__ == "__main__":
    sys.exit(main())
