"""Hybrid search on real SQLite files: the embedder is recorded and checked, vectors
land with their records, and a keyword-only store stays as it was."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.embedding import check_embedder, load_embedder
from recallstore.errors import (
    ConfigurationError,
    EmbedderFailedError,
    EmbedderMismatchError,
    MissingDependencyError,
)
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.testing import ToyEmbedder


def _counts(path: Path) -> tuple[int, int, list[tuple[str, int]]]:
    with sqlite3.connect(path) as db:
        records = db.execute("SELECT count(*) FROM memory_records").fetchone()[0]
        vectors = db.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
        embedder = db.execute("SELECT name, dimension FROM memory_embedder").fetchall()
    return records, vectors, embedder


async def test_vectors_land_with_the_records_and_the_embedder_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, embedder=ToyEmbedder()) as store:
        assert store.capabilities().search == "hybrid"
        notes = [MemoryWriteInput(scope={}, content=f"note {n} on the clinic") for n in range(3)]
        await store.write(notes)
        (gone,) = await store.write([MemoryWriteInput(scope={}, content="temporary")])
        await store.delete(gone.id)
    assert _counts(path) == (3, 3, [("recallstore-toy-512", 512)])


async def test_a_store_opened_with_another_embedder_refuses_naming_both(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, embedder=ToyEmbedder()) as store:
        await store.write([MemoryWriteInput(scope={}, content="started a job at the clinic")])
    before = _counts(path)
    other = SqliteMemoryStore(path, embedder=ToyEmbedder(dimension=64, name="other-model"))
    with pytest.raises(EmbedderMismatchError) as caught:
        await other.open()
    message = str(caught.value)
    assert "'recallstore-toy-512' (dimension 512)" in message
    assert "'other-model-64' (dimension 64)" in message
    assert caught.value.stored == ("recallstore-toy-512", 512)
    assert caught.value.given == ("other-model-64", 64)
    assert _counts(path) == before
    # Without an embedder the same file still opens for keyword search.
    async with SqliteMemoryStore(path) as plain:
        assert plain.capabilities().search == "keyword"
        hits = await plain.search(MemorySearchQuery(query="clinic"))
        assert [hit.record.content for hit in hits] == ["started a job at the clinic"]


async def test_a_keyword_only_store_writes_no_vectors(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path) as store:
        assert store.capabilities().search == "keyword"
        await store.write([MemoryWriteInput(scope={}, content="started a job at the clinic")])
        assert await store.search(MemorySearchQuery(query="where does she work")) == []
    assert _counts(path) == (1, 0, [])


class _WrongLength:
    name = "wrong"
    dimension = 8

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] * 3 for _ in texts]


async def test_a_vector_of_the_wrong_length_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, embedder=_WrongLength()) as store:
        with pytest.raises(EmbedderFailedError, match="declares dimension 8"):
            await store.write([MemoryWriteInput(scope={}, content="anything")])
    assert _counts(path) == (0, 0, [("wrong", 8)])


class _Ragged:
    name = "ragged"
    dimension = 2

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] * (2 + n % 2) for n in range(len(texts))]


async def test_ragged_vectors_name_the_embedder_and_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, embedder=_Ragged()) as store:
        ragged = "'ragged' failed: it returned vectors that are not 2"
        with pytest.raises(EmbedderFailedError, match=ragged):
            await store.write([MemoryWriteInput(scope={}, content=f"note {n}") for n in range(2)])
    assert _counts(path) == (0, 0, [("ragged", 2)])


async def test_broad_searches_use_the_cache_and_see_later_writes(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, embedder=ToyEmbedder()) as store:
        first = (await store.write([MemoryWriteInput(scope={}, content="a job at the clinic")]))[0]
        query = MemorySearchQuery(query="where does she work")
        assert [hit.record.id for hit in await store.search(query)] == [first.id]
        await store.delete(first.id)
        second = (await store.write([MemoryWriteInput(scope={}, content="hired at the office")]))[0]
        async with SqliteMemoryStore(path, embedder=ToyEmbedder()) as other:
            third = (await other.write([MemoryWriteInput(scope={}, content="her career")]))[0]
        found = [hit.record.id for hit in await store.search(query)]
        assert sorted(found) == sorted([second.id, third.id])


@pytest.mark.parametrize("scope", [{}, {"user": "ana"}])
async def test_a_store_opened_again_sees_what_others_wrote_while_it_was_closed(
    tmp_path: Path, scope: dict[str, str]
) -> None:
    # Nothing but the file may carry over from the closed connection: its
    # data_version and total_changes say nothing about the next connection's.
    path = tmp_path / "memory.db"
    store = SqliteMemoryStore(path, embedder=ToyEmbedder())
    query = MemorySearchQuery(query="where does she work", scope=scope)
    async with store:
        await store.write([MemoryWriteInput(scope={"user": "bo"}, content="a note on the garden")])
    async with store:
        assert await store.search(query) == []
    async with SqliteMemoryStore(path, embedder=ToyEmbedder()) as other:
        written = [MemoryWriteInput(scope={"user": "ana"}, content="hired at the office")]
        hired = (await other.write(written))[0]
    async with store:
        assert [hit.record.id for hit in await store.search(query)] == [hired.id]


def test_the_embedder_is_checked_and_loaded_by_name() -> None:
    with pytest.raises(ConfigurationError, match="non-empty name"):
        check_embedder(object())
    with pytest.raises(ConfigurationError, match="module:factory"):
        load_embedder("no-colon")
    with pytest.raises(ConfigurationError, match="cannot import"):
        load_embedder("no_such_module_here:make")
    with pytest.raises(ConfigurationError, match="no callable"):
        load_embedder("recallstore.testing:nothing")
    assert load_embedder("recallstore.testing:ToyEmbedder").dimension == 512


def test_an_embedder_without_numpy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(MissingDependencyError) as caught:
        InMemoryMemoryStore(embedder=ToyEmbedder())
    assert "pip install 'recallstore[hybrid]'" in str(caught.value)


@pytest.mark.slow
def test_the_package_imports_and_searches_without_numpy(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio, sys

        class _NoNumpy:
            def find_spec(self, name, path=None, target=None):
                if name == "numpy" or name.startswith("numpy."):
                    raise ImportError("numpy is blocked in this test")
                return None

        sys.meta_path.insert(0, _NoNumpy())
        import recallstore
        from recallstore import MemorySearchQuery, MemoryWriteInput, SqliteMemoryStore

        async def main():
            async with SqliteMemoryStore({str(tmp_path / "plain.db")!r}) as store:
                note = MemoryWriteInput(scope={{}}, content="started a job at the clinic")
                await store.write([note])
                hits = await store.search(MemorySearchQuery(query="clinic"))
                assert [hit.record.content for hit in hits] == ["started a job at the clinic"]
            assert "numpy" not in sys.modules
            print("ok")

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


class _AskingToy(ToyEmbedder):
    """Embeds queries differently from records, as asymmetric models (e5) do."""

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.embed([f"{text} job" for text in texts])


async def test_queries_go_through_embed_queries_when_the_embedder_has_it(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "memory.db", embedder=_AskingToy()) as store:
        await store.write([MemoryWriteInput(scope={}, content="hired by the clinic")])
        hits = await store.search(MemorySearchQuery(query="zebra"))
        assert [hit.record.content for hit in hits] == ["hired by the clinic"]


async def test_broad_searches_widen_past_filtered_out_neighbours(tmp_path: Path) -> None:
    # More records than the cache's first allocation, most of them filtered out, so the
    # matrix grows and the nearest candidates are widened until enough pass.
    path = tmp_path / "memory.db"
    embedder = ToyEmbedder(dimension=16)
    async with SqliteMemoryStore(path, embedder=embedder) as store:
        many = [
            MemoryWriteInput(scope={}, content=f"clinic job {n}", kind="episode")
            for n in range(1100)
        ]
        await store.write(many)
        (fact,) = await store.write([MemoryWriteInput(scope={}, content="hired at an office")])
        hits = await store.search(MemorySearchQuery(query="where does she work", kinds=["fact"]))
        assert [hit.record.id for hit in hits] == [fact.id]
        assert len(await store.search(MemorySearchQuery(query="her career", limit=50))) == 50


async def test_a_hybrid_store_journals_its_searches_as_hybrid(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, embedder=ToyEmbedder()) as store:
        await store.write([MemoryWriteInput(scope={}, content="started a job at the clinic")])
        await store.search(MemorySearchQuery(query="clinic"))
    async with SqliteMemoryStore(path) as plain:
        await plain.search(MemorySearchQuery(query="clinic"))
    async with SqliteMemoryStore(path) as reader:  # closing flushed the buffered events
        entries = await reader.read_journal()
    modes = [e.envelope["data"]["mode"] for e in entries if e.type == "agent.memory.search"]
    assert modes == ["hybrid", "keyword"]


@pytest.mark.parametrize("scope", [{}, {"user": "u1"}], ids=["unscoped", "scoped"])
async def test_a_reused_seq_never_inherits_a_deleted_records_vector(
    tmp_path: Path, scope: dict[str, str]
) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, embedder=ToyEmbedder()) as hybrid:
        await hybrid.write([MemoryWriteInput(scope={"user": "u1"}, content="adopted a puppy")])
        (newest,) = await hybrid.write(
            [MemoryWriteInput(scope={"user": "u1"}, content="hired by the clinic")]
        )
        query = MemorySearchQuery(scope=scope, query="career")
        assert [h.record.id for h in await hybrid.search(query)] == [newest.id]
        await hybrid.delete(newest.id)
        # Another opener without an embedder takes the deleted record's seq.
        async with SqliteMemoryStore(path) as plain:
            (unembedded,) = await plain.write(
                [MemoryWriteInput(scope={"user": "u1"}, content="bought new shoes")]
            )
        found = [h.record.id for h in await hybrid.search(query)]
        assert unembedded.id not in found
