"""A query embedded ahead of its search (``prepare_query``): a recall or a
``memory_search`` with a time phrase searches the phrase's window first and then the
whole message, one after the other; a hybrid store embeds the whole message while the
window is searched, and its search takes that vector instead of embedding it again.
The hits are the same; only when the work is done changes."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.hybrid.test_in_process_embedder import _MAKERS, InProcessToy

from recallstore import MemoryToolbox, assemble_recall
from recallstore.backends._prepared import PREPARED_QUERIES, PreparedVectors
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore, SupportsPrepareQuery
from recallstore.testing import ToyEmbedder

NOW = datetime(2026, 3, 16, 12, tzinfo=UTC)  # a Monday
SCOPE = {"user": "ana"}
MESSAGE = "what did I say last week about the clinic"
REST = "what did I say about the clinic"  # the message without its time phrase
CLINIC = {"the clinic moved to a new office", "started a new job at the clinic"}


class _AsyncToy(ToyEmbedder):
    """The kit's ToyEmbedder (no ``embed_now``: queries awaited on the loop), counting
    the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: Counter[str] = Counter()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.update(texts)
        return await super().embed(texts)


def _queries(embedder: InProcessToy) -> Counter[str]:
    """How often each query text went through ``embed_now``."""
    return Counter(text for _, queries, text in embedder.calls if queries)


async def _fill(store: MemoryStore) -> None:
    week_before = NOW - timedelta(days=7)
    await store.write(
        [
            MemoryWriteInput(scope=SCOPE, content=content, observed_at=week_before)
            for content in (*sorted(CLINIC), "adopted a puppy from the shelter")
        ]
        + [
            MemoryWriteInput(scope=SCOPE, content="booked a flight to Lisbon", observed_at=NOW),
        ]
    )


async def _begun(embedder: InProcessToy | _AsyncToy, texts: Sequence[str]) -> None:
    """Wait (up to 30 s) until every one of ``texts`` has been embedded as a query."""
    for _ in range(3_000):
        counted = embedder.texts if isinstance(embedder, _AsyncToy) else _queries(embedder)
        if all(counted[text] for text in texts):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never embedded ahead: {texts}")


def _ids(hits: Sequence[object]) -> list[tuple[str, float | None]]:
    return [(hit.record.content, hit.score) for hit in hits]  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", list(_MAKERS))
async def test_a_prepared_query_is_made_after_the_next_embedding_and_its_search_takes_it(
    tmp_path: Path, backend: str
) -> None:
    prepared, plain = InProcessToy(), InProcessToy()
    found = {}
    for name, embedder in (("prepared", prepared), ("plain", plain)):
        async with _MAKERS[backend](tmp_path, embedder, name) as store:
            await _fill(store)
            assert isinstance(store, SupportsPrepareQuery)
            if embedder is prepared:
                store.prepare_query("where does she work")
                store.prepare_query("where does she work")  # asked already: nothing more
                await asyncio.sleep(0.05)
                assert _queries(prepared)["where does she work"] == 0  # waits its turn
            # Another search's embedding ends: the one asked for is made then.
            await store.search(MemorySearchQuery(scope=SCOPE, query="clinic"))
            if embedder is prepared:
                await _begun(prepared, ["where does she work"])  # before its search
            query = MemorySearchQuery(scope=SCOPE, query="where does she work", limit=3)
            found[name] = _ids(await store.search(query))
    assert found["prepared"] == found["plain"] != []
    assert _queries(prepared) == Counter({"clinic": 1, "where does she work": 1})


async def test_a_prepared_query_no_embedding_began_is_made_by_its_search(tmp_path: Path) -> None:
    embedder = InProcessToy()
    async with SqliteMemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        await _fill(store)
        store.prepare_query("tell me about her pets")
        hits = await store.search(MemorySearchQuery(scope=SCOPE, query="tell me about her pets"))
    assert hits[0].record.content == "adopted a puppy from the shelter"
    assert _queries(embedder) == Counter({"tell me about her pets": 1})


@pytest.mark.parametrize("backend", list(_MAKERS))
async def test_an_async_embedders_prepared_query_is_taken_too(tmp_path: Path, backend: str) -> None:
    embedder = _AsyncToy()
    async with _MAKERS[backend](tmp_path, embedder, "async") as store:
        await _fill(store)
        assert isinstance(store, SupportsPrepareQuery)
        store.prepare_query("tell me about her pets")
        await store.search(MemorySearchQuery(scope=SCOPE, query="clinic"))
        await _begun(embedder, ["tell me about her pets"])
        hits = await store.search(MemorySearchQuery(scope=SCOPE, query="tell me about her pets"))
    assert hits[0].record.content == "adopted a puppy from the shelter"
    assert embedder.texts["tell me about her pets"] == 1


@pytest.mark.parametrize("backend", list(_MAKERS))
async def test_a_recall_with_a_time_phrase_embeds_its_message_once_beside_the_window(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared, plain = InProcessToy(), InProcessToy()
    recalled = {}
    for name, embedder in (("prepared", prepared), ("plain", plain)):
        async with _MAKERS[backend](tmp_path, embedder, name) as store:
            await _fill(store)
            if embedder is plain:  # the same store, told nothing ahead
                monkeypatch.setattr(store, "prepare_query", lambda text: None)
            recall = await assemble_recall(store, SCOPE, MESSAGE, now=NOW)
            recalled[name] = [record.content for record in recall.entries]
    assert recalled["prepared"] == recalled["plain"]
    assert recalled["prepared"][0] in CLINIC
    # The window's text and the whole message, each embedded once, in either order.
    assert _queries(prepared) == Counter({REST: 1, MESSAGE: 1}) == _queries(plain)


async def test_memory_search_with_a_time_phrase_embeds_its_query_once(tmp_path: Path) -> None:
    embedder = InProcessToy()
    async with SqliteMemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        await _fill(store)
        toolbox = MemoryToolbox(store, SCOPE, clock=lambda: NOW)
        result = await toolbox.call("memory_search", {"query": MESSAGE})
    assert result["ok"] is True
    assert {memory["content"] for memory in result["memories"]} == CLINIC
    assert _queries(embedder) == Counter({REST: 1, MESSAGE: 1})


async def test_the_newest_prepared_queries_wait_and_older_ones_are_given_up(
    tmp_path: Path,
) -> None:
    embedder = InProcessToy()
    texts = [f"clinic question {n}" for n in range(PREPARED_QUERIES + 2)]
    async with SqliteMemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        await _fill(store)
        for text in texts:
            store.prepare_query(text)
        await store.search(MemorySearchQuery(scope=SCOPE, query="clinic"))
        kept = texts[-PREPARED_QUERIES:]
        await _begun(embedder, kept)
        for text in kept:
            await store.search(MemorySearchQuery(scope=SCOPE, query=text))
    counted = _queries(embedder)
    assert all(counted[text] == 1 for text in kept)  # taken, not embedded again
    assert all(counted[text] == 0 for text in texts[:2])  # given up before they began


async def test_a_keyword_store_and_a_blank_text_prepare_nothing(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "k.db") as keyword:
        assert isinstance(keyword, SupportsPrepareQuery)
        keyword.prepare_query("where does she work")  # no embedder: nothing to begin
    embedder = InProcessToy()
    async with SqliteMemoryStore(tmp_path / "h.db", embedder=embedder) as store:
        store.prepare_query("   ")
        await store.search(MemorySearchQuery(scope=SCOPE, limit=5))
    assert embedder.calls == []


async def test_reembed_gives_up_vectors_prepared_by_the_model_it_replaces(
    tmp_path: Path,
) -> None:
    before, after = InProcessToy(), InProcessToy()
    async with SqliteMemoryStore(tmp_path / "m.db", embedder=before) as store:
        await _fill(store)
        store.prepare_query("where does she work")
        await store.reembed(after)
        hits = await store.search(MemorySearchQuery(scope=SCOPE, query="where does she work"))
    assert hits[0].record.content in CLINIC
    assert _queries(before) == Counter()
    assert _queries(after) == Counter({"where does she work": 1})


def _made(value: object) -> Future[object]:
    done: Future[object] = Future()
    done.set_result(value)
    return done


def test_a_vector_asked_for_is_made_once_when_the_embedding_in_flight_ends() -> None:
    made: list[str] = []

    def make(text: str) -> Callable[[], Future[object]]:
        def begun() -> Future[object]:
            made.append(text)
            return _made(f"vector of {text}")

        return begun

    prepared = PreparedVectors()
    prepared.add("a", make("a"))
    in_flight: Future[object] = Future()
    prepared.begin_after(in_flight)
    prepared.add("b", make("b"))  # asked for after that embedding began: waits for another
    assert made == []
    in_flight.set_result("the window's vector")
    assert made == ["a"]
    taken = prepared.take("a")
    assert taken is not None
    assert taken.result(timeout=5) == "vector of a"
    assert prepared.take("a") is None  # taken once
    taken = prepared.take("b")  # nothing began it: its search does
    assert made == ["a", "b"]
    assert taken is not None
    assert taken.result(timeout=5) == "vector of b"
    assert prepared.take("c") is None


def test_the_oldest_vectors_asked_for_are_given_up_and_clear_gives_up_all() -> None:
    prepared = PreparedVectors()
    for n in range(PREPARED_QUERIES + 1):
        prepared.add(f"text {n}", lambda: _made("v"))
    assert "text 0" not in prepared
    assert prepared.take("text 0") is None
    assert all(f"text {n}" in prepared for n in range(1, PREPARED_QUERIES + 1))
    prepared.clear()
    assert all(f"text {n}" not in prepared for n in range(PREPARED_QUERIES + 1))


def test_a_failed_or_cancelled_embedding_reaches_the_search_that_takes_it() -> None:
    def failing() -> Future[object]:
        raise RuntimeError("cannot schedule new futures after shutdown")

    cancelled: Future[object] = Future()
    cancelled.cancel()
    prepared = PreparedVectors()
    prepared.add("failing", failing)
    prepared.add("cancelled", lambda: cancelled)
    for text, message in (("failing", "after shutdown"), ("cancelled", "was cancelled")):
        taken = prepared.take(text)
        assert taken is not None
        with pytest.raises(RuntimeError, match=message):
            taken.result(timeout=5)
