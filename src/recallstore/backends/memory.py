"""``InMemoryMemoryStore``: the reference backend, for development, tests and CI.

Keyword search is ranked with Okapi BM25 over the same tokens the SQLite backend
indexes (minus stemming), so rarer and more matching terms rank higher.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence

from recallstore._text import query_terms, tokenize
from recallstore.errors import MemoryConflictError, MemoryNotFoundError, StoreUnavailableError
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
    check_invalid_reason,
)
from recallstore.store import (
    EXPORT_EXTENSION,
    IMPORT_EXTENSION,
    Clock,
    MonotonicClock,
    StoreLifecycle,
    check_import_batch,
    new_record_id,
    newest_timestamp,
    record_from_input,
    records_to_import,
    scope_matches,
    utc_now,
)

__all__ = ["InMemoryMemoryStore"]

_K1 = 1.2
_B = 0.75


class InMemoryMemoryStore(StoreLifecycle):
    """A process-local ``MemoryStore``; everything is lost when the process exits."""

    def __init__(self, *, clock: Clock = utc_now) -> None:
        self._clock = MonotonicClock(clock)
        self._now = clock
        self._records: dict[str, MemoryRecord] = {}
        self._tokens: dict[str, Counter[str]] = {}
        self._lock = asyncio.Lock()
        self._closed = False

    async def open(self) -> None:
        """Make the store usable (again); its records stay as they were."""
        self._closed = False

    async def aclose(self) -> None:
        """Close the store; later calls raise :class:`StoreUnavailableError`."""
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailableError("memory:", "the store is closed")

    def capabilities(self) -> MemoryStoreCapabilities:
        """Keyword search, not durable, import and export."""
        return MemoryStoreCapabilities(
            search="keyword",
            durable=False,
            extensions=frozenset({IMPORT_EXTENSION, EXPORT_EXTENSION}),
        )

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """Insert records exactly as given, atomically; identical existing ones are skipped."""
        self._check_open()
        check_import_batch(records)
        async with self._lock:
            fresh = records_to_import(records, self._records)
            for record in fresh:
                self._records[record.id] = record
                self._tokens[record.id] = Counter(tokenize(record.content))
        self._clock.observe(newest_timestamp(records))
        return len(fresh)

    async def export_records(
        self, scope: Mapping[str, str] | None = None
    ) -> AsyncIterator[MemoryRecord]:
        """Every record whose scope contains ``scope``, oldest first (a snapshot)."""
        self._check_open()
        scope_filter = MemorySearchQuery(scope=dict(scope or {})).scope
        snapshot = sorted(self._records.values(), key=lambda r: (r.created_at, r.id))
        for record in snapshot:
            if scope_matches(record.scope, scope_filter):
                yield record

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """Write all inputs atomically, applying ``supersedes`` in the same step (S1, S3)."""
        self._check_open()
        if not inputs:
            return []
        async with self._lock:
            # Validate the whole batch before touching anything, so a failure writes nothing.
            targets: set[str] = set()
            for inp in inputs:
                if inp.supersedes is None:
                    continue
                old = self._records.get(inp.supersedes)
                if old is None:
                    raise MemoryNotFoundError(inp.supersedes)
                if old.is_invalidated or inp.supersedes in targets:
                    raise MemoryConflictError(inp.supersedes, "it is already invalidated")
                targets.add(inp.supersedes)
            created: list[MemoryRecord] = []
            updates: dict[str, MemoryRecord] = {}
            for inp in inputs:
                now = self._clock()
                record = record_from_input(inp, record_id=new_record_id(), now=now)
                created.append(record)
                if inp.supersedes is not None:
                    old = self._records[inp.supersedes]
                    updates[old.id] = old.model_copy(
                        update={"invalid_at": now, "superseded_by": record.id, "updated_at": now}
                    )
            for record in created:
                self._records[record.id] = record
                self._tokens[record.id] = Counter(tokenize(record.content))
            self._records.update(updates)
            return created

    async def get(self, id: str) -> MemoryRecord | None:
        """The record, whatever its validity (S6)."""
        self._check_open()
        return self._records.get(id)

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        """Set ``invalid_at``/``invalid_reason``; idempotent (S4)."""
        self._check_open()
        reason = check_invalid_reason(reason)
        async with self._lock:
            record = self._records.get(id)
            if record is None:
                raise MemoryNotFoundError(id)
            if record.is_invalidated:
                return
            now = self._clock()
            self._records[id] = record.model_copy(
                update={"invalid_at": now, "invalid_reason": reason, "updated_at": now}
            )

    async def delete(self, id: str) -> None:
        """Forget the record and its index entries (S5)."""
        self._check_open()
        async with self._lock:
            self._records.pop(id, None)
            self._tokens.pop(id, None)

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """Filter (S7–S9), then rank by BM25 or list by recency (S10–S12)."""
        self._check_open()
        if query.limit == 0 or (query.kinds is not None and not query.kinds):
            return []
        now = self._now()
        candidates = [
            record
            for record in self._records.values()
            if scope_matches(record.scope, query.scope)
            and (query.kinds is None or record.kind in query.kinds)
            and all(tag in record.tags for tag in query.tags or ())
            and (query.include_invalidated or not record.is_invalidated)
            and (query.include_expired or not record.is_expired(now))
        ]
        candidates.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        if query.is_listing:
            return [MemoryHit(record=r, score=None) for r in candidates[: query.limit]]
        terms = query_terms(query.query or "")
        scorer = _Bm25(self._tokens, terms)
        scored = [(scorer.score(self._tokens[r.id]), r) for r in candidates]
        # Stable sort keeps the recency order among equal scores.
        ranked = sorted((pair for pair in scored if pair[0] > 0), key=lambda p: -p[0])
        return [MemoryHit(record=r, score=score) for score, r in ranked[: query.limit]]


class _Bm25:
    """Okapi BM25 (k1=1.2, b=0.75), statistics taken over every stored record."""

    def __init__(self, corpus: dict[str, Counter[str]], terms: list[str]) -> None:
        self._terms = terms
        total_docs = max(len(corpus), 1)
        self._average_length = sum(c.total() for c in corpus.values()) / total_docs or 1.0
        self._idf: dict[str, float] = {}
        for term in terms:
            containing = sum(1 for counts in corpus.values() if term in counts)
            # Lucene's always-positive idf: common terms still count, rarer ones count more.
            self._idf[term] = math.log(1 + (total_docs - containing + 0.5) / (containing + 0.5))

    def score(self, counts: Counter[str]) -> float:
        """The BM25 score of one document; 0.0 when it matches no term."""
        length = counts.total()
        norm = _K1 * (1 - _B + _B * length / self._average_length)
        score = 0.0
        for term in self._terms:
            frequency = counts.get(term, 0)
            if frequency:
                score += self._idf[term] * frequency * (_K1 + 1) / (frequency + norm)
        return score
