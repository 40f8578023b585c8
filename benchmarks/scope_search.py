"""Scope-bounded keyword search, prototyped in plain sqlite3 (no recallstore backend).

Does a search within one user's scope cost in proportion to that user's records or to
the whole store? One file holds ``--records`` synthetic memories (default 100,000; the
issue's size is ``--records 1000000``) of 12 Zipf-distributed made-up words, for
``records / 100`` users in 10 tenants, scope ``{"tenant": t, "user": u}``. The same
user-scoped queries (one common word, two mid-frequency words and a rare one) run
five ways:

* ``filter-after`` — today's store plan: FTS5 matches across every user, each match is
  checked against the scope index, ``ORDER BY bm25()``;
* ``scope-token bm25`` — the scope pairs as tokens in an FTS5 column weighted 0
  (``scope:(p1 AND p2) AND content:(a OR b OR c)``, ``bm25(f, 0.0, 1.0)``), so FTS5
  intersects doclists;
* ``scope-token + python`` — the same MATCH without ``ORDER BY bm25()`` (every match
  of the scope), re-scored by ``recallstore._search.query.bm25_score`` with document
  frequencies from an fts5vocab table;
* ``scope-token + python, df cached`` — as above with the frequencies already known
  (what a store-maintained frequency table or cache would give);
* ``scope rows + python`` — no FTS5 at all: the user's rows through the scope index,
  scored in Python (the in-memory backend's way).

Prints p50/p95 per strategy and how often its top-10 set equals its reference's: the
FTS5 strategies against ``filter-after``, the Python ones against ``scope rows +
python`` (which scores every record of the scope, so it is exact). FTS5's bm25() with a
scope column counts the scope tokens in the document length, so its order can differ
slightly from ``filter-after``.

    .venv/bin/python benchmarks/scope_search.py [--records 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _fts5 import fts5_totals

from recallstore._search.query import CorpusStatistics, bm25_score, document_stems, plan_query

TENANTS = 10
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zu", "pe", "dra", "gon"]


def scope_token(key: str, value: str) -> str:
    """One FTS5 token per scope pair: digits only, so the porter tokenizer leaves it as is
    and no user text can spell it (it lives in its own column)."""
    digest = hashlib.blake2b(f"{key}\0{value}".encode(), digest_size=8).digest()
    return "s" + str(int.from_bytes(digest, "big")).zfill(20)


class Corpus:
    def __init__(self, seed: int, vocabulary: int = 5_000) -> None:
        self.rng = random.Random(seed)
        words: set[str] = set()
        while len(words) < vocabulary:
            words.add("".join(self.rng.choice(SYLLABLES) for _ in range(self.rng.randint(2, 4))))
        self.words = sorted(words)
        self.cumulative = list(itertools.accumulate(1 / (r + 1) for r in range(vocabulary)))

    def sentence(self) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=12))

    def query(self) -> str:
        # One common word (so ranking has many matches to order), two mid-frequency
        # words and a rare one.
        return " ".join(
            [self.rng.choice(self.words[:20])]
            + [self.rng.choice(self.words[20:500]) for _ in range(2)]
            + [self.rng.choice(self.words[500:])]
        )


def build(path: Path, records: int, users: int, seed: int) -> Corpus:
    corpus = Corpus(seed)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        """
        PRAGMA journal_mode = WAL;
        CREATE TABLE m (seq INTEGER PRIMARY KEY, content TEXT NOT NULL, scope_text TEXT);
        CREATE TABLE s (record_seq INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL);
        CREATE VIRTUAL TABLE f_content USING fts5 (content, content='m', content_rowid='seq',
            tokenize='porter unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE f_scoped USING fts5 (scope_text, content, content='m',
            content_rowid='seq', tokenize='porter unicode61 remove_diacritics 2');
        """
    )
    conn.execute("BEGIN")
    for start in range(0, records, 50_000):
        rows, pairs = [], []
        for seq in range(start + 1, min(start + 50_000, records) + 1):
            user = corpus.rng.randrange(users)
            scope = {"tenant": f"t{user % TENANTS}", "user": f"u{user}"}
            tokens = " ".join(scope_token(k, v) for k, v in scope.items())
            rows.append((seq, corpus.sentence(), tokens))
            pairs += [(seq, k, v) for k, v in scope.items()]
        conn.executemany("INSERT INTO m VALUES (?, ?, ?)", rows)
        conn.executemany("INSERT INTO s VALUES (?, ?, ?)", pairs)
    conn.execute("CREATE INDEX s_pair ON s (key, value, record_seq)")
    conn.execute("INSERT INTO f_content (rowid, content) SELECT seq, content FROM m")
    conn.execute(
        "INSERT INTO f_scoped (rowid, scope_text, content) SELECT seq, scope_text, content FROM m"
    )
    conn.execute("COMMIT")
    conn.close()
    return corpus


def or_expression(text: str) -> str:
    return " OR ".join(f'"{term.word}"' for term in plan_query(text))


class Strategies:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, f_scoped, col)")
        self.rows, (_, tokens) = fts5_totals(conn, "f_scoped")
        self.average = tokens / max(self.rows, 1)
        self.cached: dict[str, int] = {}

    def filter_after(self, text: str, scope: dict[str, str]) -> list[int]:
        checks = " AND ".join(
            "EXISTS (SELECT 1 FROM s WHERE s.record_seq = m.seq AND key = ? AND value = ?)"
            for _ in scope
        )
        sql = (
            "SELECT m.seq FROM f_content JOIN m ON m.seq = f_content.rowid "
            f"WHERE f_content MATCH ? AND {checks} ORDER BY bm25(f_content) LIMIT 10"
        )
        params = [or_expression(text), *itertools.chain.from_iterable(scope.items())]
        return [row[0] for row in self.conn.execute(sql, params)]

    def _scoped_match(self, text: str, scope: dict[str, str]) -> str:
        tokens = " AND ".join(scope_token(k, v) for k, v in scope.items())
        return f"scope_text:({tokens}) AND content:({or_expression(text)})"

    def scope_token_bm25(self, text: str, scope: dict[str, str]) -> list[int]:
        sql = (
            "SELECT rowid FROM f_scoped WHERE f_scoped MATCH ? "
            "ORDER BY bm25(f_scoped, 0.0, 1.0) LIMIT 10"
        )
        return [row[0] for row in self.conn.execute(sql, (self._scoped_match(text, scope),))]

    def _python(self, text: str, rows: Sequence[tuple[int, str]], cached: bool) -> list[int]:
        query = plan_query(text)
        stems = [t.stem for t in query]
        if cached:
            frequency = {stem: self.cached[stem] for stem in stems if stem in self.cached}
        else:
            marks = ", ".join("?" * len(stems))
            frequency = dict(
                self.conn.execute(
                    f"SELECT term, doc FROM temp.vocab WHERE col = 'content' AND term IN ({marks})",
                    stems,
                )
            )
            self.cached.update(frequency)
        stats = CorpusStatistics(self.rows, self.average, frequency)
        scored = [(bm25_score(query, document_stems(content), stats), seq) for seq, content in rows]
        scored = [pair for pair in scored if pair[0] > 0]
        scored.sort(key=lambda pair: (-pair[0], -pair[1]))
        return [seq for _, seq in scored[:10]]

    def scope_token_python(
        self, text: str, scope: dict[str, str], cached: bool = False
    ) -> list[int]:
        rows = self.conn.execute(
            "SELECT m.seq, m.content FROM f_scoped JOIN m ON m.seq = f_scoped.rowid "
            "WHERE f_scoped MATCH ?",
            (self._scoped_match(text, scope),),
        ).fetchall()
        return self._python(text, rows, cached)

    def scope_rows_python(self, text: str, scope: dict[str, str]) -> list[int]:
        (key, value), *rest = sorted(scope.items(), key=lambda kv: kv[0] != "user")
        checks = "".join(
            " AND EXISTS (SELECT 1 FROM s AS o "
            "WHERE o.record_seq = m.seq AND o.key = ? AND o.value = ?)"
            for _ in rest
        )
        rows = self.conn.execute(
            "SELECT m.seq, m.content FROM s JOIN m ON m.seq = s.record_seq "
            f"WHERE s.key = ? AND s.value = ?{checks}",
            [key, value, *itertools.chain.from_iterable(rest)],
        ).fetchall()
        return self._python(text, rows, cached=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    users = max(args.records // 100, 1)
    with tempfile.TemporaryDirectory(prefix="recallstore-scope-") as tmp:
        path = Path(tmp) / "scope.db"
        started = time.perf_counter()
        corpus = build(path, args.records, users, args.seed)
        print(
            f"{args.records:,} records, {users:,} users in {TENANTS} tenants "
            f"(built in {time.perf_counter() - started:.0f} s); {args.queries} user-scoped queries"
        )
        conn = sqlite3.connect(path)
        strategies = Strategies(conn)
        queries = []
        for _ in range(args.queries):
            user = corpus.rng.randrange(users)
            queries.append((corpus.query(), {"tenant": f"t{user % TENANTS}", "user": f"u{user}"}))
        # Warm the page cache and the df cache (the cached column assumes a warm one).
        for text, scope in queries:
            strategies.filter_after(text, scope)
            strategies.scope_token_python(text, scope)
        runs: dict[str, Callable[[str, dict[str, str]], list[int]]] = {
            "filter-after (today)": strategies.filter_after,
            "scope-token bm25": strategies.scope_token_bm25,
            "scope-token + python": strategies.scope_token_python,
            "scope-token + python, df cached": lambda t, s: strategies.scope_token_python(
                t, s, True
            ),
            "scope rows + python": strategies.scope_rows_python,
        }
        fts5 = {n: set(strategies.filter_after(t, s)) for n, (t, s) in enumerate(queries)}
        exact = {n: set(strategies.scope_rows_python(t, s)) for n, (t, s) in enumerate(queries)}
        print("| strategy | p50 ms | p95 ms | same top-10 set as its reference |")
        print("|---|---|---|---|")
        for name, run in runs.items():
            reference = exact if "python" in name else fts5
            durations, same = [], 0
            for n, (text, scope) in enumerate(queries):
                begun = time.perf_counter()
                found = run(text, scope)
                durations.append(time.perf_counter() - begun)
                same += set(found) == reference[n]
            durations.sort()
            p50 = statistics.median(durations) * 1000
            p95 = durations[int(0.95 * (len(durations) - 1))] * 1000
            print(f"| {name} | {p50:.2f} | {p95:.2f} | {same}/{len(queries)} |")
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
