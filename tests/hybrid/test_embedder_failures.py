"""An embedder that fails (issue 31, defect 6): it raises, returns None or a generator,
or returns vectors that are not finite — each is an EmbedderFailedError naming it, and
nothing is written; vectors scaled by 1e30 keep their direction (they were stored as
zeros); through the toolbox the model gets a ``memory_unavailable`` tool error. On the
in-memory and SQLite stores here, Postgres in tests/postgres."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.errors import EmbedderFailedError, StoreUnavailableError
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore
from recallstore.testing import ToyEmbedder
from recallstore.toolbox import MemoryToolbox


class FlakyEmbedder:
    """The kit's ToyEmbedder, until ``mode`` says how to fail."""

    def __init__(self) -> None:
        self._toy = ToyEmbedder()
        self.mode = "good"

    @property
    def name(self) -> str:
        return "flaky"

    @property
    def dimension(self) -> int:
        return self._toy.dimension

    async def embed(self, texts: Sequence[str]) -> Any:
        vectors = await self._toy.embed(texts)
        if self.mode == "raises":
            raise ConnectionError("the embedding provider is down")
        if self.mode == "none":
            return None
        if self.mode == "generator":
            return (vector for vector in vectors)
        if self.mode == "nan":
            return [[float("nan")] * self.dimension for _ in texts]
        if self.mode == "huge":
            return [[value * 1e30 for value in vector] for vector in vectors]
        return vectors


FAILURES = {
    "raises": "it raised ConnectionError: the embedding provider is down",
    "none": "it returned NoneType, not a sequence of vectors",
    "generator": "it returned generator, not a sequence of vectors",
    "nan": "not finite",
}

StoreMaker = Callable[[FlakyEmbedder], MemoryStore]


async def check_failures_write_nothing(make: StoreMaker, mode: str) -> None:
    """A failing embedder: write and hybrid search raise EmbedderFailedError naming it
    (a StoreUnavailableError), and nothing is written."""
    embedder = FlakyEmbedder()
    async with make(embedder) as store:
        (kept,) = await store.write([MemoryWriteInput(scope={}, content="a job at the clinic")])
        embedder.mode = mode
        with pytest.raises(EmbedderFailedError) as caught:
            await store.write([MemoryWriteInput(scope={}, content="hired by the office")])
        assert isinstance(caught.value, StoreUnavailableError)
        assert caught.value.embedder == "flaky"
        assert FAILURES[mode] in str(caught.value)
        with pytest.raises(EmbedderFailedError):
            await store.search(MemorySearchQuery(query="where does she work"))
        listed = await store.search(MemorySearchQuery(limit=10))
        assert [hit.record.id for hit in listed] == [kept.id]


async def check_huge_vectors_keep_their_direction(make: StoreMaker) -> None:
    embedder = FlakyEmbedder()
    embedder.mode = "huge"
    async with make(embedder) as store:
        (record,) = await store.write(
            [MemoryWriteInput(scope={}, content="started a new job at the clinic")]
        )
        # Shares no word with the record: found by its vector alone.
        hits = await store.search(MemorySearchQuery(query="where does she work"))
        assert [hit.record.id for hit in hits] == [record.id]


async def check_the_model_gets_a_tool_error(make: StoreMaker) -> None:
    embedder = FlakyEmbedder()
    async with make(embedder) as store:
        toolbox = MemoryToolbox(store, {"user": "ana"})
        embedder.mode = "raises"
        for name, arguments in (
            ("memory_save", {"content": "Ana works at the clinic", "kind": "fact"}),
            ("memory_search", {"query": "where does Ana work"}),
        ):
            result = await toolbox.call(name, arguments)
            assert result["ok"] is False, result
            assert result["error"]["code"] == "memory_unavailable"
            assert "'flaky' failed" in result["error"]["message"]
        assert await store.search(MemorySearchQuery(limit=10)) == []


_MAKERS: dict[str, Callable[[Path], StoreMaker]] = {
    "memory": lambda tmp: lambda embedder: InMemoryMemoryStore(embedder=embedder),
    "sqlite": lambda tmp: lambda embedder: SqliteMemoryStore(tmp / "m.db", embedder=embedder),
}


@pytest.mark.parametrize("backend", list(_MAKERS))
@pytest.mark.parametrize("mode", list(FAILURES))
async def test_a_failing_embedder_is_named_and_writes_nothing(
    tmp_path: Path, backend: str, mode: str
) -> None:
    await check_failures_write_nothing(_MAKERS[backend](tmp_path), mode)


@pytest.mark.parametrize("backend", list(_MAKERS))
async def test_vectors_scaled_by_1e30_keep_their_direction(tmp_path: Path, backend: str) -> None:
    await check_huge_vectors_keep_their_direction(_MAKERS[backend](tmp_path))


@pytest.mark.parametrize("backend", list(_MAKERS))
async def test_the_model_sees_a_tool_error_it_can_act_on(tmp_path: Path, backend: str) -> None:
    await check_the_model_gets_a_tool_error(_MAKERS[backend](tmp_path))
