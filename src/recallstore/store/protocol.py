"""The ``MemoryStore`` protocol, the lifecycle every backend shares, and the named
extensions a store may offer beyond the six calls."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
)

Clock = Callable[[], datetime]
"""A source of the current UTC time; stores accept one so tests can control time."""


@runtime_checkable
class MemoryStore(Protocol):
    """Cross-session memory: a scoped, invalidation-first store of records.

    Every backend implements these six methods with the semantics S1–S17 pinned by
    ``recallstore.testing``, and is an async context manager that opens and closes it.
    """

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """Write all ``inputs`` atomically (all or none); return the records in input order."""
        ...

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """Relevance-ordered hits for ``query.query``, or a recency listing when blank."""
        ...

    async def get(self, id: str) -> MemoryRecord | None:
        """The record with ``id`` whatever its validity or expiry, or None."""
        ...

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        """Mark a record invalid; a no-op when it already is. Missing → not found."""
        ...

    async def delete(self, id: str) -> None:
        """Forget a record completely, with its index entries. Missing → no error."""
        ...

    def capabilities(self) -> MemoryStoreCapabilities:
        """What this backend offers: search mode, durability, extensions."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class StoreLifecycle:
    """``async with store:`` opens a store and closes it; a backend supplies both halves."""

    async def open(self) -> None:
        """Make the store usable; a no-op when it already is."""

    async def aclose(self) -> None:
        """Release the store's resources; later calls raise StoreUnavailableError."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def scope_matches(record_scope: Mapping[str, str], scope_filter: Mapping[str, str]) -> bool:
    """Subset match (S7): the record's scope holds every (key, value) pair of the filter."""
    return all(record_scope.get(key) == value for key, value in scope_filter.items())


IMPORT_EXTENSION = "import"
"""``capabilities().extensions`` name of stores with ``import_records`` (exact inserts)."""
EXPORT_EXTENSION = "export"
"""``capabilities().extensions`` name of stores with ``export_records`` (full streaming)."""
IDEMPOTENCY_EXTENSION = "idempotency"
"""``capabilities().extensions`` name of stores that take ``idempotency_key`` (S16)."""
JOURNAL_EXTENSION = "journal"
"""``capabilities().extensions`` name of stores that keep a durable, tailable event
journal (see ``recallstore.backends.journal``)."""
FORGET_EXTENSION = "forget"
"""``capabilities().extensions`` name of stores with ``forget(scope)``: the administrative
erasure of every record of a scope (never offered to a model)."""


def common_scope(scopes: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """The (key, value) pairs every scope shares; {} for none."""
    shared: dict[str, str] | None = None
    for scope in scopes:
        if shared is None:
            shared = dict(scope)
        else:
            shared = {key: value for key, value in shared.items() if scope.get(key) == value}
    return dict(sorted((shared or {}).items()))


@runtime_checkable
class SupportsImportRecords(Protocol):
    """A store with the ``"import"`` extension: exact inserts for lossless restores."""

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """Insert ``records`` unchanged (ids, timestamps, chains), atomically.

        An identical record already stored is skipped; a different record under an
        existing id raises :class:`~recallstore.errors.MemoryConflictError` and writes
        nothing. Returns how many were inserted.
        """
        ...


@runtime_checkable
class SupportsExportRecords(Protocol):
    """A store with the ``"export"`` extension: every record, streamed oldest first."""

    def export_records(self, scope: Mapping[str, str] | None = None) -> AsyncIterator[MemoryRecord]:
        """Every record whose scope contains ``scope`` (invalid and expired included),
        ordered by ``(created_at, id)``."""
        ...


@runtime_checkable
class SupportsForget(Protocol):
    """A store with the ``"forget"`` extension: erase every record of a scope at once."""

    async def forget(self, scope: Mapping[str, str]) -> int:
        """Delete, in one transaction, every record whose scope contains ``scope`` (S17);
        returns how many. An empty scope raises
        :class:`~recallstore.errors.MemoryValidationError` and deletes nothing."""
        ...


@runtime_checkable
class SupportsStoreId(Protocol):
    """A store that can name itself: the ``gen_ai.memory.store.id`` of its telemetry."""

    @property
    def store_id(self) -> str | None:
        """An id that is the same for every opening of this store (every process, every
        restart) and differs between stores; None while it is not open. Derived from
        nothing secret: see :func:`~recallstore.store.store_id_from`."""
        ...
