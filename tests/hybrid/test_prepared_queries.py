"""A query embedded ahead of its search (``prepare_query``): a recall or a
``memory_search`` with a time phrase searches the phrase's window first and then the
whole message, one after the other; a hybrid store embeds the whole message while the
window is searched, and its search takes that vector instead of embedding it again.
The hits are the same; only when the work is done changes."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.hybrid.test_in_process_embedder import _MAKERS, InProcessToy

from recallstore import MemoryToolbox, assemble_recall
from recallstore.backends._hybrid import PREPARED_QUERIES
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


class _Overlapping(InProcessToy):
    """Notes whether the whole message's embedding had begun while the window's text
    was embedded (it waits up to ``wait`` seconds for it to begin)."""

    def __init__(self, wait: float) -> None:
        super().__init__()
        self.wait = wait
        self.message_begun = threading.Event()
        self.overlapped: bool | None = None

    def embed_now(self, texts: Sequence[str], *, queries: bool = False) -> list[list[float]]:
        if queries and list(texts) == [MESSAGE]:
            self.message_begun.set()
        if queries and list(texts) == [REST]:
            self.overlapped = self.message_begun.wait(self.wait)
        return super().embed_now(texts, queries=queries)


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
async def test_a_prepared_query_is_embedded_once_and_its_search_takes_it(
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
                store.prepare_query("where does she work")  # already begun: nothing more
                await _begun(prepared, ["where does she work"])  # before any search
            query = MemorySearchQuery(scope=SCOPE, query="where does she work", limit=3)
            found[name] = _ids(await store.search(query))
    assert found["prepared"] == found["plain"] != []
    assert _queries(prepared) == Counter({"where does she work": 1})


@pytest.mark.parametrize("backend", list(_MAKERS))
async def test_an_async_embedders_prepared_query_is_taken_too(tmp_path: Path, backend: str) -> None:
    embedder = _AsyncToy()
    async with _MAKERS[backend](tmp_path, embedder, "async") as store:
        await _fill(store)
        assert isinstance(store, SupportsPrepareQuery)
        store.prepare_query("tell me about her pets")
        await _begun(embedder, ["tell me about her pets"])
        hits = await store.search(MemorySearchQuery(scope=SCOPE, query="tell me about her pets"))
    assert hits[0].record.content == "adopted a puppy from the shelter"
    assert embedder.texts["tell me about her pets"] == 1


@pytest.mark.parametrize("backend", list(_MAKERS))
async def test_a_recall_with_a_time_phrase_embeds_its_message_once_beside_the_window(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Told ahead, the store begins the message while the window is searched (waited
    # for up to 30 s); told nothing, it cannot begin it before the window's search is
    # done (0.5 s is plenty to see that it does not).
    prepared, plain = _Overlapping(wait=30), _Overlapping(wait=0.5)
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
    assert (prepared.overlapped, plain.overlapped) == (True, False)
    # The window's text and the whole message, each embedded once, in either order.
    assert _queries(prepared) == Counter({REST: 1, MESSAGE: 1}) == _queries(plain)


async def test_memory_search_with_a_time_phrase_embeds_its_query_once(tmp_path: Path) -> None:
    embedder = _Overlapping(wait=30)
    async with SqliteMemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        await _fill(store)
        toolbox = MemoryToolbox(store, SCOPE, clock=lambda: NOW)
        result = await toolbox.call("memory_search", {"query": MESSAGE})
    assert result["ok"] is True
    assert {memory["content"] for memory in result["memories"]} == CLINIC
    assert embedder.overlapped is True
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
        kept = texts[-PREPARED_QUERIES:]
        await _begun(embedder, kept)
        for text in kept:
            await store.search(MemorySearchQuery(scope=SCOPE, query=text))
    counted = _queries(embedder)
    assert all(counted[text] == 1 for text in kept)  # taken, not embedded again
    assert all(counted[text] <= 1 for text in texts[:2])  # given up (perhaps never run)


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
        await _begun(before, ["where does she work"])
        await store.reembed(after)
        hits = await store.search(MemorySearchQuery(scope=SCOPE, query="where does she work"))
    assert hits[0].record.content in CLINIC
    assert _queries(after) == Counter({"where does she work": 1})
