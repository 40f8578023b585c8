"""``HybridSearch``: what a backend with an embedder adds to ``BaseMemoryStore``.

A backend built on :class:`HybridSearch` takes ``embedder=`` and, when given one:

* embeds every write batch once, before its transaction (``write``, ``import_records``),
  and hands the vectors to the backend's ``_insert`` (:meth:`_vectors_of`), which
  stores them in that same transaction;
* answers a text query by fusing its keyword ranking with the records nearest the
  query's embedding, both over the same filtered records (``recallstore._search.fusion``);
* declares ``capabilities().search == "hybrid"``.

Without an embedder nothing changes: no numpy, no vectors, keyword search as before.
The backend supplies one primitive, :meth:`_nearest`.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import asynccontextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import TypeVar, cast

from recallstore._search.fusion import (
    FUSION_DEPTH,
    FUSION_METHOD,
    VECTOR_WEIGHT,
    FusionMethod,
    fuse,
)
from recallstore.backends._hits import scored_hit
from recallstore.backends._vectors import (
    Matrix,
    embed_texts,
    embed_texts_now,
    embedding_threads,
    embeds_in_process,
    numpy,
)
from recallstore.backends.base import BaseMemoryStore
from recallstore.embedding import (
    Embedder,
    InProcessEmbedder,
    check_embedder,
    load_embedder,
    resolve_embedder,
)
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    SearchMode,
)

__all__ = ["FUSION_DEPTH", "HybridSearch", "hits_of"]

Handle = TypeVar("Handle")

# The vectors of the write call running in this task, by content: set by write() before
# its transaction, read by the backend's _insert inside it.
_PENDING: ContextVar[dict[str, Matrix] | None] = ContextVar("recallstore_vectors", default=None)


class HybridSearch(BaseMemoryStore[Handle]):
    """A ``BaseMemoryStore`` that searches by meaning too when given an embedder."""

    _embedder: Embedder | None = None
    _fusion: tuple[FusionMethod, float] = (FUSION_METHOD, VECTOR_WEIGHT)

    def _init_hybrid(self, embedder: Embedder | str | None) -> None:
        """Call from the backend's constructor (or before the store is opened).
        ``embedder`` as :func:`~recallstore.embedding.resolve_embedder` takes it
        (``"default"`` is recallstore's own)."""
        resolved = resolve_embedder(embedder)
        if resolved is not None:
            numpy()  # fail at construction, with the install command, not at first write
        self._embedder = resolved

    @property
    def embedder(self) -> Embedder | None:
        """The embedder this store was opened with, or None (keyword search)."""
        return self._embedder

    @property
    def _vector_check(self) -> tuple[str, tuple[str, int]]:
        """What the store's recorded embedder must still be (another process may have
        run ``reembed``): (the store's target, (name, dimension))."""
        assert self._embedder is not None
        return self.describe().target, (self._embedder.name, self._embedder.dimension)

    def _searching_by(self) -> SearchMode:
        """``"hybrid"`` when the store has an embedder, else as declared."""
        return "hybrid" if self._embedder is not None else self.search_mode

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """As ``BaseMemoryStore.write``; with an embedder, the batch's contents are
        embedded first (one call) and stored with the records in their transaction."""
        async with self._embedding([inp.content for inp in inputs]):
            return await super().write(inputs)

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """As ``BaseMemoryStore.import_records``, embedding the batch first."""
        async with self._embedding([record.content for record in records]):
            return await super().import_records(records)

    @asynccontextmanager
    async def _embedding(self, contents: Sequence[str]) -> AsyncIterator[None]:
        """The vectors of ``contents`` ready for ``_vectors_of`` while the body runs
        (nothing to do without an embedder or contents)."""
        if self._embedder is None or not contents:
            yield
            return
        self._check_open()
        token = _PENDING.set(await self._embed_pending(contents))
        try:
            yield
        finally:
            _PENDING.reset(token)

    async def _embed_pending(self, contents: Sequence[str]) -> dict[str, Matrix]:
        assert self._embedder is not None
        distinct = list(dict.fromkeys(contents))
        matrix = await embed_texts(self._embedder, distinct, target=self.describe().target)
        return dict(zip(distinct, matrix, strict=True))

    def _vectors_of(self, records: Sequence[MemoryRecord]) -> list[Matrix] | None:
        """The vectors of ``records`` (embedded by the write call), or None without an
        embedder. For the backend's ``_insert``."""
        if self._embedder is None:
            return None
        pending = _PENDING.get()
        if pending is None:
            raise RuntimeError("records inserted outside write() or import_records()")
        return [pending[record.content] for record in records]

    def _fuse(
        self,
        query: MemorySearchQuery,
        keyword: Sequence[tuple[float, str]],
        nearest: Sequence[tuple[float, str]],
    ) -> list[tuple[float, str]]:
        """The ``query.limit`` best ids of the keyword ranking (score, id) and the nearest
        records (cosine, id), fused (``recallstore._search.fusion``)."""
        method, weight = self._fusion
        return fuse(list(keyword), list(nearest), query.limit, method=method, weight=weight)

    async def _hybrid_search(
        self,
        query: MemorySearchQuery,
        keyword: Sequence[tuple[float, str]],
        known: Mapping[str, Callable[[], MemoryRecord]],
        query_vector: Matrix,
        now: datetime,
        *,
        nearest: Sequence[tuple[float, str]] | None = None,
    ) -> list[MemoryHit]:
        """Fuse ``keyword`` (the keyword ranking as (score, id), at least ``FUSION_DEPTH``
        deep; ``known`` builds each one's record) with the records nearest
        ``query_vector`` under the same filters (:meth:`_nearest`, unless the caller
        found them already: ``nearest``). Records are built for the hits only."""
        if nearest is None:
            nearest = await self._nearest(query, query_vector, max(query.limit, FUSION_DEPTH), now)
        fused = self._fuse(query, keyword, nearest)
        missing = [key for _, key in fused if key not in known]
        fetched: dict[str, MemoryRecord] = {}
        if missing:
            async with self._reading() as handle:
                fetched = await self._fetch_records(handle, missing)
        return hits_of(fused, known, fetched)

    async def _embed_query(self, text: str) -> Matrix:
        """The unit vector of the query ``text``."""
        assert self._embedder is not None
        if embeds_in_process(self._embedder):
            return await asyncio.wrap_future(self._query_vector(text))
        matrix = await embed_texts(
            self._embedder, [text], queries=True, target=self.describe().target
        )
        return matrix[0]

    def _query_vector(self, text: str) -> Future[Matrix]:
        """The unit vector of the query ``text``, being made while the caller goes on:
        by an in-process embedder's ``embed_now`` in one of :func:`embedding_threads`
        (a thread waiting on the future wakes as soon as it is made), otherwise by the
        embedder's async call on the running event loop."""
        embedder = self._embedder
        assert embedder is not None
        if embeds_in_process(embedder):
            in_process = cast(InProcessEmbedder, embedder)
            return embedding_threads().submit(self._embed_query_now, in_process, text)
        return asyncio.run_coroutine_threadsafe(self._embed_query(text), asyncio.get_running_loop())

    def _embed_query_now(self, embedder: InProcessEmbedder, text: str) -> Matrix:
        target = self.describe().target
        return embed_texts_now(embedder, [text], queries=True, target=target)[0]

    @staticmethod
    def _fusion_query(query: MemorySearchQuery) -> MemorySearchQuery:
        """``query`` asking for the keyword ranking's ``FUSION_DEPTH`` best."""
        return query.model_copy(update={"limit": max(query.limit, FUSION_DEPTH)})

    async def reembed(
        self,
        embedder: Embedder | str,
        *,
        batch: int = 256,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Make ``embedder`` this store's embedder: embed every record with it and
        replace every vector and the recorded embedder in one transaction (searches
        never see vectors of two models). Returns how many records were embedded.

        Records are embedded before the transaction, ``batch`` at a time, calling
        ``progress(done, total)`` after each; records written meanwhile are embedded
        inside it. Open the store without an embedder (or with this one) to call it;
        afterwards open it with ``embedder``. ``embedder`` may be ``"default"`` (or
        ``"module:factory"``), as for the constructor.
        """
        embedder = (
            load_embedder(embedder) if isinstance(embedder, str) else check_embedder(embedder)
        )
        self._check_open()
        contents: dict[str, str] = {}
        async for record in self.export_records():
            contents[record.id] = record.content
        ids = list(contents)
        made: dict[str, Matrix] = {}
        for start in range(0, len(ids), max(batch, 1)):
            page = ids[start : start + max(batch, 1)]
            vectors = await embed_texts(
                embedder, [contents[key] for key in page], target=self.describe().target
            )
            made.update(zip(page, vectors, strict=True))
            if progress is not None:
                progress(len(made), len(ids))
        async with self._writing() as handle:
            await self._lock_embedder(handle)
            records = [
                record
                for record in await self._all_records(handle)
                if record.id not in made or record.content != contents.get(record.id)
            ]
            if records:
                late = await embed_texts(
                    embedder,
                    [record.content for record in records],
                    target=self.describe().target,
                )
                made.update(zip((record.id for record in records), late, strict=True))
            await self._replace_vectors(handle, embedder, made)
        if self._embedder is not None:
            self._embedder = embedder
        return len(made)

    async def _lock_embedder(self, handle: Handle) -> None:
        """Keep other openers from writing vectors until ``reembed``'s transaction ends
        (a backend whose write transactions already exclude each other needs nothing)."""

    async def _all_records(self, handle: Handle) -> list[MemoryRecord]:
        """Every stored record, read through the write transaction (for ``reembed``)."""
        found = []
        async for record in self._export({}):
            found.append(record)
        return found

    async def _replace_vectors(
        self, handle: Handle, embedder: Embedder, vectors: dict[str, Matrix]
    ) -> None:
        """Drop every vector, store ``vectors`` (by record id; ids no longer stored are
        skipped) and record ``embedder`` with a new generation, in ``handle``'s
        transaction."""
        raise NotImplementedError(f"{type(self).__name__} cannot re-embed its records")

    @abstractmethod
    async def _nearest(
        self, query: MemorySearchQuery, vector: Matrix, n: int, now: datetime
    ) -> list[tuple[float, str]]:
        """The ``n`` records passing ``query``'s filters (scope, kinds, tags, validity,
        expiry against ``now``) closest to the unit ``vector``, as (cosine, id), best
        first. Records without a vector are left out."""


def hits_of(
    fused: Sequence[tuple[float, str]],
    known: Mapping[str, Callable[[], MemoryRecord]],
    fetched: Mapping[str, MemoryRecord],
) -> list[MemoryHit]:
    """The hits of ``fused`` ids: built by ``known`` or taken from ``fetched``."""
    hits = []
    for score, key in fused:
        record = known[key]() if key in known else fetched.get(key)
        if record is not None:  # else deleted between two reads
            hits.append(scored_hit(record, score))
    return hits
