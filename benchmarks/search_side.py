"""Keyword search through SqliteMemoryStore beside its floor, interleaved query by query.

Each query runs once through ``store.search`` and then, at once, as search_bench.py's
floor (the store's FTS5 expression in plain sqlite3, FTS5's ``ORDER BY bm25() LIMIT
10``), so load on a shared machine hits both alike. Reuses a file search_bench.py built:

    .venv/bin/python benchmarks/search_side.py FILE USERS
"""

import asyncio
import sqlite3
import statistics as st
import sys
import time
from datetime import UTC, datetime

from search_bench import make_queries

from recallstore._search.query import plan_query
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.search import candidates_sql, match_expression


async def main(path: str, users: int) -> None:
    conn = sqlite3.connect(path)
    async with SqliteMemoryStore(path) as store:
        for q in make_queries(users, 200, seed=1)["unscoped search"]:
            await store.search(q)
        out = []
        for name in ("unscoped search", "user-scoped search"):
            qs = make_queries(users, 200, seed=2)[name]
            ts = []
            fs = []
            for q in qs:
                t = time.perf_counter()
                await store.search(q)
                ts.append(time.perf_counter() - t)
                sql, params = candidates_sql(q, datetime.now(UTC), ordered=True)
                sql = sql.replace("bm25(memory_fts, 1.0, 0.0)", "bm25(memory_fts)")
                e = match_expression(q.scope, plan_query(q.query), q.query)
                t = time.perf_counter()
                conn.execute(sql, [e, *params, 10]).fetchall()
                fs.append(time.perf_counter() - t)
            a, b = st.median(ts) * 1000, st.median(fs) * 1000
            out.append(f"{name}: store {a:.2f} floor {b:.2f} ({a / b:.2f}x)")
        print(" | ".join(out))


asyncio.run(main(sys.argv[1], int(sys.argv[2])))
