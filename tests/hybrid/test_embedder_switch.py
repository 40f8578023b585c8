"""A store still open with the old embedder while ``reembed`` runs in another process
(issue 31, defect 1): it notices the switch on its next call and refuses with
:class:`EmbedderSwitchedError`, writes no vector of the old model, and no hybrid search
crashes on vectors of another size, on SQLite (the real CLI in a subprocess) and
Postgres (the reembed code in a subprocess)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.errors import EmbedderSwitchedError
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore
from recallstore.testing import ToyEmbedder

ROOT = Path(__file__).resolve().parents[2]
QUESTION = MemorySearchQuery(query="where does she work")


def small_toy() -> ToyEmbedder:
    """The embedder the subprocess switches to (``module:factory`` for the CLI)."""
    return ToyEmbedder(dimension=64, name="small")


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}


async def run_in_subprocess(*argv: str) -> str:
    """Run ``python argv`` in another process (without blocking the event loop, so
    this process's store keeps writing meanwhile); its stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *argv,
        cwd=ROOT,
        env=_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return err.decode()


async def write_until(store: MemoryStore, done: asyncio.Event) -> tuple[int, int]:
    """Write and hybrid-search until ``done``; (writes that landed, calls refused)."""
    landed = refused = 0
    number = 0
    while not done.is_set() or landed == 0:
        number += 1
        try:
            await store.write([MemoryWriteInput(scope={}, content=f"job note {number}")])
            landed += 1
            await store.search(QUESTION)
        except EmbedderSwitchedError:
            refused += 1
            if done.is_set():
                break
        await asyncio.sleep(0)
    return landed, refused


async def check_both_sides(
    old: MemoryStore, new_store: Callable[[], MemoryStore], count: Callable[[], Awaitable[int]]
) -> None:
    """After the switch: the old opener refuses writes and hybrid searches (nothing
    written); an opener with the new embedder writes and searches."""
    before = await count()
    with pytest.raises(EmbedderSwitchedError) as caught:
        await old.write([MemoryWriteInput(scope={}, content="a job at the office")])
    assert caught.value.stored == ("small-64", 64)
    assert caught.value.given == ("recallstore-toy-512", 512)
    assert "reopen" in str(caught.value)
    with pytest.raises(EmbedderSwitchedError):
        await old.search(QUESTION)
    assert await count() == before
    # A listing needs no vector: it still answers.
    assert len(await old.search(MemorySearchQuery(limit=1))) == 1
    async with new_store() as fresh:
        (written,) = await fresh.write([MemoryWriteInput(scope={}, content="hired by a clinic")])
        found = [hit.record.id for hit in await fresh.search(QUESTION)]
        assert written.id in found
        assert await count() == before + 1


@pytest.mark.slow
async def test_sqlite_store_open_during_a_reembed_cli_refuses_then_new_opener_works(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"

    async def count() -> int:
        with sqlite3.connect(path) as db:
            return int(db.execute("SELECT count(*) FROM memory_records").fetchone()[0])

    async with SqliteMemoryStore(path, embedder=ToyEmbedder()) as old:
        await old.write([MemoryWriteInput(scope={}, content=f"note {n}") for n in range(200)])
        done = asyncio.Event()
        writer = asyncio.create_task(write_until(old, done))
        spec = "tests.hybrid.test_embedder_switch:small_toy"
        try:
            report = await run_in_subprocess(
                "-m", "recallstore", "reembed", "--db", str(path), "--embedder", spec
            )
        finally:
            done.set()
        landed, refused = await writer
        assert "embedded" in report
        assert landed > 0
        assert refused >= 1
        with sqlite3.connect(path) as db:
            # Every vector is the new model's: none of the old one's landed after it.
            sizes = {len(row[0]) for row in db.execute("SELECT vector FROM memory_vectors")}
            assert sizes == {4 * 64}
            records = db.execute("SELECT count(*) FROM memory_records").fetchone()[0]
            vectors = db.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
            assert records == vectors
        await check_both_sides(old, lambda: SqliteMemoryStore(path, embedder=small_toy()), count)


async def test_sqlite_search_skips_a_vector_of_the_wrong_size(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, embedder=ToyEmbedder()) as store:
        records = await store.write(
            [MemoryWriteInput(scope={}, content=f"job {n} at the clinic") for n in range(3)]
        )
        with sqlite3.connect(path) as db:
            # What a store without the check wrote: a vector of another model's size.
            db.execute(
                "UPDATE memory_vectors SET vector = zeroblob(256) WHERE record_seq = "
                "(SELECT seq FROM memory_records WHERE id = ?)",
                (records[0].id,),
            )
        found = {hit.record.id for hit in await store.search(QUESTION)}
        assert {record.id for record in records[1:]} <= found
