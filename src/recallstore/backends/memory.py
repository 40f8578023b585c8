"""``InMemoryMemoryStore``: the reference backend, for development, tests and CI.

Keyword search indexes the same Porter stems as the SQLite backend and ranks with the
ranking every keyword backend shares (``recallstore._search.query``): every record of the
filters holding a query stem is a candidate, statistics are counted over the store.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime
from typing import Final, Self

from recallstore._search.query import (
    Candidate,
    CorpusStatistics,
    QueryTerm,
    document_stems,
    rank_records,
)
from recallstore.backends._forget_extension import ForgetsScopes, Forgotten
from recallstore.backends._forget_traces import provenance_of
from recallstore.backends._hybrid import HybridSearch
from recallstore.backends._promote_extension import PromotesRecords
from recallstore.backends._revise_extension import RevisesRecords
from recallstore.backends._time_filters import stands_then
from recallstore.backends._vectors import Matrix, numpy, top_cosine
from recallstore.backends.base import (
    IdempotencyKey,
    RecordChanges,
    StoreDescription,
    idempotency_key_of,
)
from recallstore.embedding import Embedder
from recallstore.errors import ConfigurationError
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    Provenance,
    format_timestamp,
)
from recallstore.store import (
    EXPORT_EXTENSION,
    FORGET_EXTENSION,
    IDEMPOTENCY_EXTENSION,
    IMPORT_EXTENSION,
    PROMOTE_EXTENSION,
    REVISE_EXTENSION,
    Clock,
    LedgerEntry,
    StoredRevision,
    new_record_id,
    scope_matches,
    store_id_from,
    utc_now,
)

__all__ = ["MEMORY_TARGET", "InMemoryMemoryStore"]

MEMORY_TARGET: Final = "memory:"
"""The store target (``--db``, ``RECALLSTORE_DB``) of a new in-memory store."""


class InMemoryMemoryStore(
    PromotesRecords[None], RevisesRecords[None], ForgetsScopes[None], HybridSearch[None]
):
    """A process-local ``MemoryStore``: keyword or hybrid search, not durable, import,
    export, forget, revise, promote.

    Everything is lost when the process exits. It is usable without ``open()``;
    after ``aclose()`` calls fail until it is opened again, its records intact.
    With ``embedder=`` its search is hybrid (see docs/hybrid-search.md), as for the
    durable backends.
    """

    durable = False
    extensions = frozenset(
        {
            IMPORT_EXTENSION,
            EXPORT_EXTENSION,
            IDEMPOTENCY_EXTENSION,
            FORGET_EXTENSION,
            REVISE_EXTENSION,
            PROMOTE_EXTENSION,
        }
    )

    def __init__(
        self,
        *,
        clock: Clock = utc_now,
        ids: Callable[[], str] = new_record_id,
        embedder: Embedder | str | None = None,
    ) -> None:
        super().__init__(clock=clock, ids=ids)
        self._init_hybrid(embedder)
        self._vectors: dict[str, Matrix] = {}
        self._records: dict[str, MemoryRecord] = {}
        # The search index: each record's stems, the records holding each stem, and the
        # store's token total (for the mean length BM25 normalises by).
        self._stems: dict[str, Counter[str]] = {}
        self._postings: dict[str, set[str]] = {}
        self._tokens = 0
        self._revisions: dict[str, StoredRevision] = {}
        self._ledger: list[LedgerEntry] = []
        self._lock = asyncio.Lock()
        self._closed = False
        # Its records live as long as this object: so does its id.
        self._store_id = store_id_from(f"memory:{uuid.uuid4().hex}")

    @classmethod
    def from_url(cls, url: str) -> Self:
        """A new, empty store for ``"memory:"`` (the only target this backend takes)."""
        if url.strip().lower() != MEMORY_TARGET:
            raise ConfigurationError(
                f"memory store target {url!r}: the in-memory store takes no location; "
                f"use {MEMORY_TARGET!r}"
            )
        return cls()

    def describe(self) -> StoreDescription:
        """``InMemoryMemoryStore`` at ``memory:``, with no file."""
        return StoreDescription(label=type(self).__name__, target=MEMORY_TARGET)

    async def open(self) -> None:
        """Make the store usable (again); its records stay as they were."""
        self._closed = False

    async def aclose(self) -> None:
        """Close the store; later calls raise :class:`StoreUnavailableError`."""
        self._closed = True

    @property
    def _is_open(self) -> bool:
        return not self._closed

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[None]:
        yield None

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        # Checks and changes happen under one lock; the base class checks everything
        # before the first change, so a failed batch changes nothing.
        async with self._lock:
            yield None

    async def _fetch_records(self, handle: None, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        found = ((record_id, self._records.get(record_id)) for record_id in ids)
        return {record_id: record for record_id, record in found if record is not None}

    async def _fetch_keyed(
        self, handle: None, keys: Sequence[IdempotencyKey]
    ) -> dict[IdempotencyKey, MemoryRecord]:
        # Under the write lock, so nothing can take a key between this look-up and the insert.
        wanted = set(keys)
        found: dict[IdempotencyKey, MemoryRecord] = {}
        for record in self._records.values():
            key = idempotency_key_of(record)
            if record.idempotency_key and not record.is_invalidated and key in wanted:
                found[key] = record
        return found

    async def _insert(self, handle: None, records: Sequence[MemoryRecord]) -> None:
        vectors = self._vectors_of(records)
        if vectors is not None:
            self._vectors.update(zip((record.id for record in records), vectors, strict=True))
        for record in records:
            self._records[record.id] = record
            stems = Counter(document_stems(record.content))
            self._stems[record.id] = stems
            self._tokens += stems.total()
            for stem in stems:
                self._postings.setdefault(stem, set()).add(record.id)

    async def _update(self, handle: None, id: str, changes: RecordChanges) -> None:
        self._records[id] = self._records[id].model_copy(update=dict(changes))

    async def _keep_revision(self, handle: None, revision: StoredRevision) -> None:
        self._revisions[revision.id] = revision

    async def _fetch_revision(self, handle: None, revision_id: str) -> StoredRevision | None:
        return self._revisions.get(revision_id)

    async def _all_revisions(self, handle: None) -> list[StoredRevision]:
        return list(self._revisions.values())

    async def _mark_reverted(self, handle: None, revision_id: str, at: datetime) -> None:
        self._revisions[revision_id] = replace(self._revisions[revision_id], reverted_at=at)

    async def _replace_revision(self, handle: None, revision: StoredRevision) -> None:
        self._revisions[revision.id] = revision

    async def _set_supports(
        self, handle: None, id: str, supports: tuple[Provenance, ...], at: datetime
    ) -> None:
        update = {"supports": supports, "updated_at": at}
        self._records[id] = self._records[id].model_copy(update=update)

    async def _append_ledger(self, handle: None, entry: LedgerEntry) -> None:
        self._ledger.append(entry)

    async def _ledger_rows(self, handle: None, record_id: str | None) -> list[LedgerEntry]:
        return [e for e in self._ledger if record_id is None or e.record_id == record_id]

    async def _delete_ledger_rows(self, handle: None, ids: Sequence[str]) -> None:
        doomed = set(ids)
        self._ledger = [e for e in self._ledger if e.id not in doomed]

    async def _delete(self, id: str) -> None:
        async with self._lock:
            record = self._records.get(id)
            self._remove(id)
            if record is not None:
                await self._erase_traces(None, [id], provenance_of(record))

    async def _forget(self, handle: None, scope: Mapping[str, str]) -> list[Forgotten]:
        # Under the write lock (_writing), like every change.
        doomed = sorted(
            (r for r in self._records.values() if scope_matches(r.scope, scope)),
            key=lambda r: (r.created_at, r.id),
        )
        for record in doomed:
            self._remove(record.id)
        return [(record.id, record.kind, provenance_of(record)) for record in doomed]

    def _remove(self, id: str) -> None:
        """Drop the record and its postings; nothing when absent."""
        self._records.pop(id, None)
        self._vectors.pop(id, None)
        stems = self._stems.pop(id, None)
        if stems is not None:
            self._tokens -= stems.total()
            for stem in stems:
                holders = self._postings[stem]
                holders.discard(id)
                if not holders:
                    del self._postings[stem]

    async def _search(
        self, query: MemorySearchQuery, terms: Sequence[str], now: datetime
    ) -> list[MemoryHit]:
        if self._embedder is None or query.is_listing:
            return await self._keyword_search(query, now)
        vector = await self._embed_query(query.query or "")
        keyword = await self._keyword_search(self._fusion_query(query), now)
        ranked = [(hit.score or 0.0, hit.record.id) for hit in keyword]
        known = {hit.record.id: (lambda r=hit.record: r) for hit in keyword}
        return await self._hybrid_search(query, ranked, known, vector, now)

    async def _nearest(
        self, query: MemorySearchQuery, vector: Matrix, n: int, now: datetime
    ) -> list[tuple[float, str]]:
        admitted = [
            record
            for record in self._records.values()
            if record.id in self._vectors and _admitted(query, record, now)
        ]
        if not admitted:
            return []
        matrix = numpy().stack([self._vectors[record.id] for record in admitted])
        return [(score, admitted[row].id) for score, row in top_cosine(matrix, vector, n)]

    async def _all_records(self, handle: None) -> list[MemoryRecord]:
        return list(self._records.values())

    async def _replace_vectors(
        self, handle: None, embedder: Embedder, vectors: dict[str, Matrix]
    ) -> None:
        self._vectors = {key: vector for key, vector in vectors.items() if key in self._records}

    async def _keyword_search(self, query: MemorySearchQuery, now: datetime) -> list[MemoryHit]:
        def admitted(record: MemoryRecord) -> bool:
            return _admitted(query, record, now)

        if query.is_listing:
            listed = sorted(
                (record for record in self._records.values() if admitted(record)),
                key=lambda r: (r.created_at, r.id),
                reverse=True,
            )
            return [MemoryHit(record=r, score=None) for r in listed[: query.limit]]

        async def fetch(query_terms: Sequence[QueryTerm], n: int) -> list[Candidate[MemoryRecord]]:
            # Every match, whatever n: the ranking then sees what SQLite's exhaustive
            # path sees within a scope.
            ids = set().union(*(self._postings.get(term.stem, ()) for term in query_terms))
            records = (self._records[record_id] for record_id in ids)
            return [
                Candidate(record, record.content, (format_timestamp(record.created_at), record.id))
                for record in records
                if admitted(record)
            ]

        async def statistics(stems: Sequence[str]) -> CorpusStatistics:
            documents = len(self._records)
            frequency = {
                stem: len(self._postings[stem]) for stem in stems if stem in self._postings
            }
            return CorpusStatistics(
                documents, self._tokens / documents if documents else 0.0, frequency
            )

        ranked = await rank_records(query.query or "", fetch, statistics, query.limit)
        return [MemoryHit(record=record, score=score) for score, record in ranked]

    async def _export(self, scope: Mapping[str, str]) -> AsyncIterator[MemoryRecord]:
        snapshot = sorted(self._records.values(), key=lambda r: (r.created_at, r.id))
        for record in snapshot:
            if scope_matches(record.scope, scope):
                yield record


def _admitted(query: MemorySearchQuery, record: MemoryRecord, now: datetime) -> bool:
    return (
        scope_matches(record.scope, query.scope)
        and (query.kinds is None or record.kind in query.kinds)
        and all(tag in record.tags for tag in query.tags or ())
        and stands_then(query, record, now)
        and (query.target_key is None or _target_key(record) == query.target_key)
    )


def _target_key(record: MemoryRecord) -> str | None:
    return None if record.target is None else record.target.key
