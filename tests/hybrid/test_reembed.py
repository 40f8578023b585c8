"""Switching a store's embedder: ``reembed`` (store method and ``recallstore reembed``)."""

from __future__ import annotations

import asyncio
import io
import sqlite3
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.cli import main
from recallstore.errors import EmbedderMismatchError
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.testing import ToyEmbedder


def small_toy() -> ToyEmbedder:
    """The factory the CLI test names (``module:factory``)."""
    return ToyEmbedder(dimension=64, name="small")


async def _write_some(path: Path) -> None:
    async with SqliteMemoryStore(path, embedder=ToyEmbedder()) as store:
        await store.write([MemoryWriteInput(scope={}, content="a job at the clinic")])
        await store.write([MemoryWriteInput(scope={}, content=f"note {n}") for n in range(5)])


async def test_reembed_switches_every_vector_and_the_recorded_embedder(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    await _write_some(path)
    seen: list[tuple[int, int]] = []
    async with SqliteMemoryStore(path) as plain:
        count = await plain.reembed(small_toy(), batch=4, progress=lambda d, t: seen.append((d, t)))
    assert count == 6
    assert seen == [(4, 6), (6, 6)]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT name, dimension, generation FROM memory_embedder").fetchall() == [
            ("small-64", 64, 2)
        ]
        assert {len(row[0]) for row in db.execute("SELECT vector FROM memory_vectors")} == {256}
    with pytest.raises(EmbedderMismatchError):
        await SqliteMemoryStore(path, embedder=ToyEmbedder()).open()
    async with SqliteMemoryStore(path, embedder=small_toy()) as store:
        hits = await store.search(MemorySearchQuery(query="where does she work"))
        assert [hit.record.content for hit in hits] == ["a job at the clinic"]


async def test_an_open_hybrid_store_keeps_searching_after_reembed() -> None:
    store = InMemoryMemoryStore(embedder=ToyEmbedder())
    async with store:
        await store.write([MemoryWriteInput(scope={}, content="a job at the clinic")])
        assert await store.reembed(small_toy()) == 1
        assert store.embedder is not None
        assert store.embedder.name == "small-64"
        hits = await store.search(MemorySearchQuery(query="where does she work"))
        assert len(hits) == 1


async def test_the_reembed_command_draws_progress_and_reports(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    await _write_some(path)
    err = io.StringIO()
    with redirect_stderr(err):
        code = await _run_cli(
            ["reembed", "--db", str(path), "--embedder", f"{__name__}:small_toy", "--progress"]
        )
    assert code == 0
    assert "embedding [" in err.getvalue()
    assert "embedded 6 records with 'small-64' (dimension 64)" in err.getvalue()


async def _run_cli(argv: list[str]) -> int:
    # main() runs its own event loop: off this test's loop, on a thread.
    return await asyncio.to_thread(main, argv)
