"""What the default embedder costs beside keyword search, in one run (SQLite).

Three measurements, each side by side in the same process:

1. **Search at ``--records``** (100k by default): a keyword-only store and a store with
   the default embedder, built from the same seed (search_bench's corpus and scopes).
   The records' vectors are made once by the real model for a pool of ``--pool``
   corpus sentences, and each record gets the pool vector its text hashes to: embedding
   100k records with the model would take the benchmark a quarter of an hour, and what
   a search costs once the vectors exist does not depend on which vector a record has.
   The query's vector is made by the real model **inside** each timed hybrid search
   (``embed_queries``), so the hybrid figure includes the query's embedding. Each query
   runs on both stores, one right after the other, the order alternating. The
   user-scoped queries are timed again as a conversation's turn 1 (the query's scope,
   its text as the first user message): ``assemble_recall`` alone,
   ``MemoryCapability.instantiate`` (the recall, the learned block and the toolbox),
   and ``assemble_recall`` of the text with a time phrase after it (" this week",
   whose window holds the store's records): the phrase's window is searched first,
   then the whole text (a hybrid store embeds both texts).
2. **Writes**: ``--writes`` records written one per call (an agent's saves) and in
   batches of 100 (an import), to a keyword-only store and to one with the default
   embedder (every text embedded by the real model, in its write call).
3. **Query embedding alone**: the default embedder and the sentence-transformers
   all-MiniLM-L6-v2 of ``make bench-hybrid`` (when installed) on the same questions,
   alternating, batch of one.

    .venv/bin/python benchmarks/semantic_bench.py [--records 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import zlib
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from _models import missing_packages
from search_bench import TENANTS, build, make_queries, summary, timed
from store_bench import Corpus

from recallstore import MemoryCapability
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.embedding import Embedder, QueryEmbedder, default_embedder
from recallstore.recall import assemble_recall
from recallstore.records import MemorySearchQuery, MemoryWriteInput

_QUESTIONS = [
    "What's my job again?",
    "Is satay sauce safe for me?",
    "When did I move to Lisbon?",
    "What did we talk about for my daughter's birthday party?",
    "Which hotel did I book for the conference in May?",
    "How do I like my reports formatted?",
    "What's the name of my dog?",
    "Did I ever tell you which car I drive?",
]

_Timed = Literal["search", "assemble_recall", "instantiate", "time phrase recall"]
"""What :func:`_side_by_side` times for each query."""


class PooledEmbedder:
    """The default embedder's name and queries; records get pool vectors by hash."""

    def __init__(self, model: QueryEmbedder, pool: Any) -> None:
        self.name = model.name
        self.dimension = model.dimension
        self._model = model
        self._pool = pool

    async def embed(self, texts: Sequence[str]) -> Any:
        rows = [zlib.crc32(text.encode()) % len(self._pool) for text in texts]
        return self._pool[rows]

    async def embed_queries(self, texts: Sequence[str]) -> Any:
        return await self._model.embed_queries(texts)

    def embed_now(self, texts: Sequence[str], *, queries: bool = False) -> Any:
        """As the default embedder offers it (so the store embeds queries as with it)."""
        if queries:
            return self._model.embed_now(texts, queries=True)
        return self._pool[[zlib.crc32(text.encode()) % len(self._pool) for text in texts]]


async def search_costs(records: int, count: int, pool_size: int) -> None:
    users = max(records // 100, 1)
    model = default_embedder()
    assert isinstance(model, QueryEmbedder)
    started = time.perf_counter()
    pool = await model.embed([Corpus(users, seed=11).sentence() for _ in range(pool_size)])
    print(
        f"search: {records:,} records, {users:,} users in {TENANTS} tenants, {count} queries; "
        f"{pool_size} pool vectors made by the model in {time.perf_counter() - started:.1f} s"
    )
    embedder = PooledEmbedder(model, pool)
    with tempfile.TemporaryDirectory(prefix="recallstore-semantic-") as tmp:
        keyword = SqliteMemoryStore(Path(tmp) / "keyword.db", journal=None)
        hybrid = SqliteMemoryStore(Path(tmp) / "hybrid.db", journal=None, embedder=embedder)
        async with keyword, hybrid:
            for name, store in (("keyword", keyword), ("hybrid", hybrid)):
                seconds = await build(store, Corpus(users), records, users)
                print(f"  {name} store built in {seconds:.1f} s")
            for queries in make_queries(users, count, seed=1).values():
                for query in queries:
                    await keyword.search(query)
                    await hybrid.search(query)
            rows = []
            for kind, queries in make_queries(users, count, seed=2).items():
                if "listing" in kind:
                    continue
                rows.append((kind, *await _side_by_side(keyword, hybrid, model, queries)))
                if kind == "user-scoped search":
                    turn_one: tuple[_Timed, ...] = (
                        "assemble_recall",
                        "instantiate",
                        "time phrase recall",
                    )
                    for how in turn_one:
                        timed_row = await _side_by_side(keyword, hybrid, model, queries, how)
                        rows.append((f"turn 1: {how}", *timed_row))
    print(
        f"  {'search':30s} {'keyword p50 ms':>15s} {'hybrid p50 ms':>15s} {'ratio':>7s}"
        f" {'query embedding p50 ms':>23s} {'ratio':>7s}"
    )
    for kind, plain, mixed, alone in rows:
        print(
            f"  {kind:30s} {plain:15.2f} {mixed:15.2f} {mixed / plain:7.2f}"
            f" {alone:23.2f} {alone / plain:7.2f}"
        )
    print("  (hybrid includes embedding the query with the default embedder; the last two")
    print("  columns are that embedding alone, and it over keyword search; turn 1 is the")
    print("  query's scope and text as a conversation's first user message, default budget)")


async def _side_by_side(
    keyword: SqliteMemoryStore,
    hybrid: SqliteMemoryStore,
    model: QueryEmbedder,
    queries: list[MemorySearchQuery],
    how: _Timed = "search",
) -> tuple[float, float, float]:
    """p50 ms of each query on the keyword store, on the hybrid store and of embedding
    its text alone, one right after the other, the order rotating; ``how`` is what is
    timed (:func:`_run`)."""
    durations: dict[str, list[float]] = {"keyword": [], "hybrid": [], "query": []}
    for index, query in enumerate(queries):
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "keyword": lambda q=query: _run(keyword, q, how),
            "hybrid": lambda q=query: _run(hybrid, q, how),
            # The query's embedding alone: the floor of the hybrid figure.
            "query": lambda q=query: model.embed_queries([q.query or ""]),
        }
        names = list(calls)
        names = names[index % 3 :] + names[: index % 3]  # the order rotates
        for name in names:
            (took,) = await timed([calls[name]])
            durations[name].append(took)
    keyword_ms, hybrid_ms, query_ms = (summary(durations[name])[0] for name in durations)
    return keyword_ms, hybrid_ms, query_ms


async def _run(store: SqliteMemoryStore, query: MemorySearchQuery, how: _Timed) -> object:
    """``query`` as a search, as a turn-1 recall of its scope and text
    (``assemble_recall``; with " this week" after the text for ``time phrase recall``),
    or as a conversation's start (``instantiate``: the recall, the learned block and
    the toolbox, what an agent's first turn waits for)."""
    if how == "assemble_recall":
        return await assemble_recall(store, query.scope, query.query or "")
    if how == "time phrase recall":
        return await assemble_recall(store, query.scope, f"{query.query} this week")
    if how == "instantiate":
        capability = MemoryCapability(store, scope_fields=sorted(query.scope))
        return await capability.instantiate(
            query.scope, conversation_id="bench", first_user_text=query.query or ""
        )
    return await store.search(query)


async def write_costs(count: int) -> None:
    corpus = Corpus(1000, seed=5)
    inputs = [
        MemoryWriteInput(scope=corpus.scope(), content=corpus.sentence()) for _ in range(count)
    ]
    print(f"writes: {count} records to each store (the default embedder embeds every text)")
    print(f"  {'writes':22s} {'keyword rec/s':>15s} {'default rec/s':>15s} {'ratio':>7s}")
    with tempfile.TemporaryDirectory(prefix="recallstore-semantic-") as tmp:
        for label, batch in (("one per call", 1), ("batches of 100", 100)):
            rates = {}
            for name, embedder in (("keyword", None), ("default", "default")):
                path = Path(tmp) / f"{name}-{batch}.db"
                async with SqliteMemoryStore(path, embedder=embedder) as store:
                    started = time.perf_counter()
                    for offset in range(0, count, batch):
                        await store.write(inputs[offset : offset + batch])
                    rates[name] = count / (time.perf_counter() - started)
            ratio = rates["default"] / rates["keyword"]
            print(f"  {label:22s} {rates['keyword']:15.0f} {rates['default']:15.0f} {ratio:7.2f}")


class _AsRecords:
    """The default embedder's record path (float products) for a query."""

    def __init__(self, model: Embedder) -> None:
        self.name = model.name
        self.dimension = model.dimension
        self._model = model

    async def embed_queries(self, texts: Sequence[str]) -> Any:
        return await self._model.embed(texts)


async def query_embedding(count: int) -> None:
    default = default_embedder()
    assert isinstance(default, QueryEmbedder)
    models: dict[str, Any] = {
        "default (queries: int8 products)": default,
        "default, records' float products": _AsRecords(default),
    }
    if missing_packages("minilm"):
        print("query embedding: sentence-transformers MiniLM not installed (make bench-hybrid)")
    else:
        from _models import MiniLmEmbedder

        models["sentence-transformers MiniLM"] = _AsRecords(MiniLmEmbedder())
    questions = [_QUESTIONS[index % len(_QUESTIONS)] + f" ({index})" for index in range(count)]
    durations: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():
        await model.embed_queries(questions[:5])  # loaded and warm
    for index, question in enumerate(questions):
        names = list(models) if index % 2 else list(reversed(models))
        for name in names:
            started = time.perf_counter()
            await models[name].embed_queries([question])
            durations[name].append(time.perf_counter() - started)
    print(f"query embedding, batch of one, {count} questions, alternating:")
    for name, values in durations.items():
        p50, p95 = summary(values)
        print(f"  {name:34s} p50 {p50:6.2f} ms   p95 {p95:6.2f} ms")


async def run(args: argparse.Namespace) -> None:
    await query_embedding(args.queries)
    await write_costs(args.writes)
    await search_costs(args.records, args.queries, args.pool)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=1_000)
    parser.add_argument("--pool", type=int, default=2_000, help="vectors made by the model")
    args = parser.parse_args(argv)
    missing = missing_packages("default")
    if missing:
        print(f"skipped: pip install 'recallstore[semantic]' (missing {', '.join(missing)})")
        return 0
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
