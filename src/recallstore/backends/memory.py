"""``InMemoryMemoryStore``: the reference backend, for development, tests and CI.

Keyword search is ranked with Okapi BM25 over the same tokens the SQLite backend
indexes (minus stemming), so rarer and more matching terms rank higher.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Final, Self

from recallstore._text import tokenize
from recallstore.backends._ranking import Bm25
from recallstore.backends.base import (
    BaseMemoryStore,
    IdempotencyKey,
    RecordChanges,
    StoreDescription,
    idempotency_key_of,
)
from recallstore.errors import ConfigurationError
from recallstore.records import MemoryHit, MemoryRecord, MemorySearchQuery
from recallstore.store import (
    EXPORT_EXTENSION,
    IDEMPOTENCY_EXTENSION,
    IMPORT_EXTENSION,
    Clock,
    new_record_id,
    scope_matches,
    utc_now,
)

__all__ = ["MEMORY_TARGET", "InMemoryMemoryStore"]

MEMORY_TARGET: Final = "memory:"
"""The store target (``--db``, ``RECALLSTORE_DB``) of a new in-memory store."""


class InMemoryMemoryStore(BaseMemoryStore[None]):
    """A process-local ``MemoryStore``: keyword search, not durable, import and export.

    Everything is lost when the process exits. It is usable without ``open()``;
    after ``aclose()`` calls fail until it is opened again, its records intact.
    """

    durable = False
    extensions = frozenset({IMPORT_EXTENSION, EXPORT_EXTENSION, IDEMPOTENCY_EXTENSION})

    def __init__(self, *, clock: Clock = utc_now, ids: Callable[[], str] = new_record_id) -> None:
        super().__init__(clock=clock, ids=ids)
        self._records: dict[str, MemoryRecord] = {}
        self._tokens: dict[str, Counter[str]] = {}
        self._lock = asyncio.Lock()
        self._closed = False

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
        for record in records:
            self._records[record.id] = record
            self._tokens[record.id] = Counter(tokenize(record.content))

    async def _update(self, handle: None, id: str, changes: RecordChanges) -> None:
        self._records[id] = self._records[id].model_copy(update=dict(changes))

    async def _delete(self, id: str) -> None:
        async with self._lock:
            self._records.pop(id, None)
            self._tokens.pop(id, None)

    async def _search(
        self, query: MemorySearchQuery, terms: Sequence[str], now: datetime
    ) -> list[MemoryHit]:
        candidates = [
            record
            for record in self._records.values()
            if scope_matches(record.scope, query.scope)
            and (query.kinds is None or record.kind in query.kinds)
            and all(tag in record.tags for tag in query.tags or ())
            and (query.include_invalidated or not record.is_invalidated)
            and (query.include_expired or not record.is_expired(now))
            and (query.target_key is None or _target_key(record) == query.target_key)
        ]
        candidates.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        if query.is_listing:
            return [MemoryHit(record=r, score=None) for r in candidates[: query.limit]]
        scorer = Bm25(self._tokens, terms)
        scored = [(scorer.score(self._tokens[r.id]), r) for r in candidates]
        # Stable sort keeps the recency order among equal scores.
        ranked = sorted((pair for pair in scored if pair[0] > 0), key=lambda p: -p[0])
        return [MemoryHit(record=r, score=score) for score, r in ranked[: query.limit]]

    async def _export(self, scope: Mapping[str, str]) -> AsyncIterator[MemoryRecord]:
        snapshot = sorted(self._records.values(), key=lambda r: (r.created_at, r.id))
        for record in snapshot:
            if scope_matches(record.scope, scope):
                yield record


def _target_key(record: MemoryRecord) -> str | None:
    return None if record.target is None else record.target.key
