"""An embedder that embeds in process (``embed_now``, as the default embedder does): a
search's query is embedded by ``embed_now(..., queries=True)`` in one of the store's
query threads, never on the event loop's thread, with the same hits as through the
async ``embed``; records are still embedded by ``embed``. On the in-memory and SQLite
stores here (Postgres runs the same code through ``_embed_query``, with the default
embedder in tests/backends/postgres)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future
from pathlib import Path
from typing import Any

import pytest

from recallstore import InProcessEmbedder
from recallstore.backends import _vectors
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore
from recallstore.testing import ToyEmbedder


class InProcessToy(ToyEmbedder):
    """The kit's ToyEmbedder with ``embed_now``, noting each call's thread and kind."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, bool, str]] = []
        self.embedded: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return await super().embed(texts)

    def embed_now(self, texts: Sequence[str], *, queries: bool = False) -> list[list[float]]:
        self.calls.append((threading.current_thread().name, queries, ",".join(texts)))
        return [self._vector(text) for text in texts]


_MAKERS: dict[str, Callable[[Path, ToyEmbedder, str], MemoryStore]] = {
    "memory": lambda tmp, embedder, name: InMemoryMemoryStore(embedder=embedder),
    "sqlite": lambda tmp, embedder, name: SqliteMemoryStore(tmp / f"{name}.db", embedder=embedder),
}

_CONTENTS = [
    "started a new job at the clinic",
    "adopted a puppy from the shelter",
    "booked a flight to Lisbon for the holiday",
    "the clinic moved to a new office",
    "my cat sleeps on the keyboard",
]
_QUERIES = ["where does she work", "tell me about her pets", "is there a trip coming up", "clinic"]


def test_the_protocol_is_public_and_the_default_embedder_is_one() -> None:
    assert isinstance(InProcessToy(), InProcessEmbedder)
    assert not isinstance(ToyEmbedder(), InProcessEmbedder)
    pytest.importorskip("onnxruntime", reason="the default embedder needs the semantic extra")
    from recallstore.embedding import default_embedder

    assert isinstance(default_embedder(), InProcessEmbedder)


@pytest.mark.parametrize("backend", list(_MAKERS))
async def test_queries_are_embedded_in_a_query_thread_with_the_same_hits(
    tmp_path: Path, backend: str
) -> None:
    in_process, plain = InProcessToy(), ToyEmbedder()
    found: dict[str, list[list[tuple[str, float | None]]]] = {}
    for name, embedder in (("in_process", in_process), ("plain", plain)):
        async with _MAKERS[backend](tmp_path, embedder, name) as store:
            await store.write(
                [MemoryWriteInput(scope={"user": "ana"}, content=c) for c in _CONTENTS]
            )
            found[name] = [
                [
                    (hit.record.content, hit.score)
                    for hit in await store.search(
                        MemorySearchQuery(scope={"user": "ana"}, query=query, limit=3)
                    )
                ]
                for query in _QUERIES
            ]
    assert found["in_process"] == found["plain"]
    assert all(hits for hits in found["in_process"])
    # Records through the async embed; every query once through embed_now, off the loop.
    assert in_process.embedded == _CONTENTS
    assert [(queries, text) for _, queries, text in in_process.calls] == [
        (True, query) for query in _QUERIES
    ]
    loop_thread = threading.current_thread().name
    assert all(name.startswith("recallstore-query") for name, _, _ in in_process.calls)
    assert loop_thread not in {name for name, _, _ in in_process.calls}


class _Failing(InProcessToy):
    def __init__(self, answer: object) -> None:
        super().__init__()
        self.answer = answer
        self.failing = True

    def embed_now(self, texts: Sequence[str], *, queries: bool = False) -> list[list[float]]:
        if not self.failing:
            return super().embed_now(texts, queries=queries)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer  # type: ignore[return-value]


@pytest.mark.parametrize("backend", list(_MAKERS))
@pytest.mark.parametrize(
    ("answer", "named"),
    [
        (RuntimeError("the model's session failed"), "it raised RuntimeError: the model's"),
        (None, "it returned NoneType, not a sequence of vectors"),
        ([], "it returned 0 vectors for 1 texts"),
        ([[float("nan")] * 512], "not finite"),
        ([[1.0] * 3], "declares dimension 512 but returned vectors of shape (1, 3)"),
    ],
)
async def test_a_failing_embed_now_is_named_and_the_store_goes_on(
    tmp_path: Path, backend: str, answer: object, named: str
) -> None:
    from recallstore.errors import EmbedderFailedError

    embedder = _Failing(answer)
    async with _MAKERS[backend](tmp_path, embedder, "failing") as store:
        (kept,) = await store.write([MemoryWriteInput(scope={}, content="a job at the clinic")])
        with pytest.raises(EmbedderFailedError, match="'recallstore-toy-512' failed") as caught:
            await store.search(MemorySearchQuery(query="where does she work"))
        assert named in str(caught.value)
        listed = await store.search(MemorySearchQuery(limit=10))
        assert [hit.record.id for hit in listed] == [kept.id]
        embedder.failing = False  # the embedder recovers: so does search
        hits = await store.search(MemorySearchQuery(query="where does she work"))
        assert [hit.record.id for hit in hits] == [kept.id]


async def test_a_search_cancelled_while_its_query_is_embedded_leaves_the_store_usable(
    tmp_path: Path,
) -> None:
    release = threading.Event()

    class Slow(InProcessToy):
        def embed_now(self, texts: Sequence[str], *, queries: bool = False) -> list[list[float]]:
            release.wait(10)
            return super().embed_now(texts, queries=queries)

    async with SqliteMemoryStore(tmp_path / "m.db", embedder=Slow()) as store:
        await store.write([MemoryWriteInput(scope={}, content="started a job at the clinic")])
        searching = asyncio.create_task(store.search(MemorySearchQuery(query="clinic")))
        await asyncio.sleep(0.05)
        searching.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await searching
        hits = await store.search(MemorySearchQuery(query="clinic"))
        assert [hit.record.content for hit in hits] == ["started a job at the clinic"]


def test_another_process_gets_query_threads_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # A forked child's copy of the executor has no threads: keyed by the process id,
    # the child makes its own instead of queueing work that nothing would run.
    parent = _vectors.embedding_threads()
    assert _vectors.embedding_threads() is parent
    monkeypatch.setattr("recallstore.backends._vectors.os.getpid", lambda: -1)
    child = _vectors.embedding_threads()
    assert child is not parent
    assert child.submit(lambda: 7).result(timeout=10) == 7
    monkeypatch.undo()
    assert _vectors.embedding_threads() is not child  # the parent's pid: made anew


class _AsyncOnly(ToyEmbedder):
    """The kit's ToyEmbedder failing on demand, with no ``embed_now``: queries awaited
    on the event loop."""

    failing = False

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.failing:
            raise ConnectionError("the embedding provider is down")
        return await super().embed(texts)


@pytest.mark.parametrize("in_process", [True, False])
async def test_a_large_scopes_cosines_made_apart_rank_as_the_memory_backend(
    tmp_path: Path, in_process: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A scope past COMPARED_APART rows has its cosines computed when the vector is
    # made (in the query thread, or handed to one when the loop made it), while the
    # connection's thread ranks by words: the same hits, and the embedder's failure
    # still reaches the caller, named.
    from recallstore.backends.sqlite import nearest
    from recallstore.backends.sqlite.nearest import COMPARED_APART
    from recallstore.errors import EmbedderFailedError

    made_apart: list[int] = []

    def counted(matrix: Any, vector: Future[Any]) -> Future[Any]:
        made_apart.append(len(matrix))
        return _vectors.cosines_when_made(matrix, vector)

    monkeypatch.setattr(nearest, "cosines_when_made", counted)

    scope = {"user": "ana"}
    # 1,005 of the 1,341 records in ana's scope: past COMPARED_APART.
    inputs = [
        MemoryWriteInput(scope=scope if n % 4 else {"user": "bo"}, content=f"{word} note {n}")
        for n in range(COMPARED_APART * 4 // 3 + 8)
        for word in [("clinic", "puppy", "flight", "garden")[n % 4]]
    ]
    embedder = InProcessToy() if in_process else _AsyncOnly()
    found = []
    for store in (
        SqliteMemoryStore(tmp_path / "m.db", embedder=embedder),
        InMemoryMemoryStore(embedder=ToyEmbedder()),
    ):
        async with store:
            await store.write(inputs)
            found.append(
                [
                    [(hit.record.content, hit.score) for hit in await store.search(query)]
                    for text in ("where does she work", "her pets", "garden note 7")
                    for query in [MemorySearchQuery(scope=scope, query=text, limit=20)]
                ]
            )
            if isinstance(store, SqliteMemoryStore):
                if isinstance(embedder, InProcessToy):
                    in_query_threads = {name for name, _, _ in embedder.calls}
                    assert all(name.startswith("recallstore-query") for name in in_query_threads)
                    failing: ToyEmbedder = _Failing(RuntimeError("the model's session failed"))
                else:
                    embedder.failing = True
                    failing = embedder
                async with SqliteMemoryStore(tmp_path / "m.db", embedder=failing) as broken:
                    with pytest.raises(EmbedderFailedError, match="failed: it raised"):
                        await broken.search(MemorySearchQuery(scope=scope, query="clinic"))
    assert found[0] == found[1]
    assert all(hits for hits in found[0])
    assert set(made_apart) == {1_005}


def test_cosines_when_made_wait_for_the_vector_and_pass_its_failure_on() -> None:
    import numpy as np

    matrix = np.eye(3, dtype=np.float32)
    made: Future[Any] = Future()
    scores = _vectors.cosines_when_made(matrix, made)
    assert not scores.done()
    made.set_result(np.array([0.0, 1.0, 0.0], dtype=np.float32))  # set here: not a query thread
    assert scores.result(timeout=10).tolist() == [0.0, 1.0, 0.0]
    # A vector made before anyone asks: compared all the same.
    again = _vectors.cosines_when_made(matrix, made)
    assert again.result(timeout=10).tolist() == [0.0, 1.0, 0.0]
    failed: Future[Any] = Future()
    failed.set_exception(ConnectionError("the provider is down"))
    with pytest.raises(ConnectionError, match="the provider is down"):
        _vectors.cosines_when_made(matrix, failed).result(timeout=10)
    cancelled: Future[Any] = Future()
    cancelled.cancel()
    with pytest.raises(CancelledError):
        _vectors.cosines_when_made(matrix, cancelled).result(timeout=10)
