"""``BaseMemoryStore``: the store rules every backend shares, over a few storage primitives.

A backend subclasses :class:`BaseMemoryStore` and implements storage only (open, close,
read handle, write transaction, fetch by id, insert, update the invalidation fields,
delete, search, and streaming records for ``"export"``). The base class owns what the
protocol says about those operations, once for every backend (docs/backends.md):

* the open check (:class:`~recallstore.errors.StoreUnavailableError` on a closed store);
* ``write([])`` → ``[]``; the reason check of ``invalidate``; ids no store can hold;
* supersede validation, over one state read (``_fetch_invalid``): a missing target
  is not found, one already invalid (or named twice in the batch) is a conflict,
  and nothing is written either way;
* the "matches nothing" shortcut of ``search`` (limit 0, ``kinds=[]``, no words);
* the monotonic clock and the id source (``clock=``, ``ids=``);
* ``capabilities()``, built from the class attributes ``search_mode``, ``durable``,
  ``single_opener`` and ``extensions``; ``import_records`` on top of the same primitives.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar

from recallstore._search.text import query_terms
from recallstore.backends._identity import StoreIdentity
from recallstore.backends._journal_buffer import JournalBuffer
from recallstore.backends._journal_extension import JournalExtension
from recallstore.backends._keys import (
    IdempotencyKey,
    idempotency_key_of,
    idempotency_keys,
    supersede_target,
)
from recallstore.backends._time_filters import check_observed_inputs
from recallstore.backends.journal import (
    SEARCH_TYPE,
    JournalSettings,
    envelope,
    invalidate_data,
    search_data,
    write_data,
    write_scope,
)
from recallstore.errors import (
    ConfigurationError,
    MemoryConflictError,
    MemoryNotFoundError,
    StoreUnavailableError,
)
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
    SearchMode,
    check_invalid_reason,
)
from recallstore.store import (
    EXPORT_EXTENSION,
    IDEMPOTENCY_EXTENSION,
    JOURNAL_EXTENSION,
    Clock,
    MonotonicClock,
    NewRecords,
    StoreLifecycle,
    check_import_batch,
    ids_from,
    is_storable_id,
    new_record_id,
    newest_timestamp,
    records_to_import,
    utc_now,
)
from recallstore.values import canonical_scope

__all__ = [
    "BaseMemoryStore",
    "IdempotencyKey",
    "RecordChanges",
    "StoreDescription",
    "idempotency_key_of",
]

Handle = TypeVar("Handle")
"""What a backend's read handle and write transaction yield (a connection, or None)."""

RecordChanges = Mapping[str, datetime | str | None]
"""Fields of one stored record to overwrite: ``invalid_at``, ``updated_at`` and
``invalid_reason`` (invalidate) or ``superseded_by`` (supersede)."""


@dataclass(frozen=True)
class StoreDescription:
    """How a store presents itself on the command line, the dashboard and the MCP server."""

    label: str
    """A short name, the store's class name by default (``"SqliteMemoryStore"``)."""
    target: str
    """Where the store is, safe to show: a path, ``"memory:"``, a URL without password."""
    path: Path | None = None
    """The database file, for a store kept in one; None otherwise."""

    def __str__(self) -> str:
        """``label · path`` for a file store, else ``label``."""
        return self.label if self.path is None else f"{self.label} · {self.path}"


class BaseMemoryStore(
    StoreIdentity, StoreLifecycle, JournalExtension[Handle], ABC, Generic[Handle]
):
    """A ``MemoryStore`` whose shared rules are done; a subclass supplies storage primitives.

    Declare what the backend offers in three class attributes (they become ``capabilities()``),
    take ``clock`` and ``ids`` in the constructor and pass them on, and implement the abstract
    methods. Stamp with ``self._clock()``; "now" is ``self._now()`` (public: ``self.clock``).
    """

    search_mode: ClassVar[SearchMode] = "keyword"
    """``capabilities().search``: ``"keyword"``, ``"semantic"`` or ``"hybrid"``."""
    durable: ClassVar[bool] = False
    """``capabilities().durable``: records survive closing and reopening the store."""
    single_opener: ClassVar[bool] = False
    """``capabilities().single_opener``: durable, but one opener at a time (a second
    opener gets :class:`~recallstore.errors.StoreUnavailableError`)."""
    extensions: ClassVar[frozenset[str]] = frozenset()
    """``capabilities().extensions``, e.g. ``{IMPORT_EXTENSION, EXPORT_EXTENSION}``."""

    def __init__(
        self,
        *,
        clock: Clock = utc_now,
        ids: Callable[[], str] = new_record_id,
        journal: JournalSettings | None = None,
    ) -> None:
        """``clock`` gives the current UTC time, ``ids`` a new record id (``deterministic_ids``
        for tests); ``journal`` turns on the event journal (for a backend with its primitives)."""
        for name, value in (("clock", clock), ("ids", ids)):
            if not callable(value):
                raise ConfigurationError(f"{name} must be a callable, got {value!r}")
        if journal is not None and not isinstance(journal, JournalSettings):
            raise ConfigurationError(f"journal must be JournalSettings or None, got {journal!r}")
        if journal is not None and type(self)._append_journal is BaseMemoryStore._append_journal:
            raise ConfigurationError(f"{type(self).__name__} keeps no event journal")
        self._now = self.clock = clock
        self._clock = MonotonicClock(clock)
        self._ids = ids
        self._journal = journal
        self._journal_buffer: JournalBuffer | None = None
        if journal is not None and journal.reads:
            self._journal_buffer = JournalBuffer(
                journal.flush_seconds, self._flush_journal_rows, self._prune_journal_by_age
            )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if EXPORT_EXTENSION in cls.extensions and cls._export is BaseMemoryStore._export:
            raise TypeError(f"{cls.__name__} declares the 'export' extension but no _export()")
        keyed = cls._fetch_keyed is not BaseMemoryStore._fetch_keyed
        if IDEMPOTENCY_EXTENSION in cls.extensions and not keyed:
            raise TypeError(
                f"{cls.__name__} declares the 'idempotency' extension but no _fetch_keyed()"
            )

    # --- what a backend says about itself ---------------------------------------------

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The unopened store for ``url``; the registry calls it for the backend's schemes."""
        raise ConfigurationError(f"{cls.__name__} cannot be opened from a URL such as {url!r}")

    def describe(self) -> StoreDescription:
        """How this store presents itself (override to give its location and file)."""
        return StoreDescription(label=type(self).__name__, target=type(self).__name__)

    def _searching_by(self) -> SearchMode:
        """This store's search mode now: the declared one unless a subclass knows better."""
        return self.search_mode

    def capabilities(self) -> MemoryStoreCapabilities:
        """The declared search mode, durability, single opener and extensions."""
        journal = {JOURNAL_EXTENSION} if self._journal is not None else set()
        return MemoryStoreCapabilities(
            search=self._searching_by(),
            durable=self.durable,
            single_opener=self.single_opener,
            extensions=self.extensions | journal,
        )

    # --- the protocol, on top of the primitives ---------------------------------------

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """Write all inputs in one transaction, applying ``supersedes`` in it (S1–S3);
        an input whose ``idempotency_key`` is taken returns or supersedes that record (S16)."""
        self._check_open()
        if not inputs:
            return []
        check_observed_inputs(inputs, self._now())
        keys = idempotency_keys(inputs)
        if keys and IDEMPOTENCY_EXTENSION not in self.extensions:
            raise ConfigurationError(
                f"{type(self).__name__} does not declare the {IDEMPOTENCY_EXTENSION!r} "
                "extension, so it cannot take an idempotency_key"
            )
        async with self._writing() as handle:
            holders = await self._fetch_keyed(handle, keys) if keys else {}
            results: list[MemoryRecord | None] = []
            supersedes: list[str | None] = []
            for inp in inputs:
                holder = holders.get(idempotency_key_of(inp)) if inp.idempotency_key else None
                if holder is not None and inp.says_the_same_as(holder):
                    results.append(holder)
                    continue
                results.append(None)
                supersedes.append(supersede_target(inp, holder))
            targets = [target for target in supersedes if target is not None]
            if targets:
                await self._check_supersede_targets(handle, targets)
            batch = self._new_records(
                [inp for inp, done in zip(inputs, results, strict=True) if not done]
            )
            # Invalidate first: a keyed record and its successor never are both valid,
            # not even inside the transaction (the unique index on the key checks each row).
            for target, record_id, stamp in zip(supersedes, batch.ids, batch.stamps, strict=True):
                if target is not None:
                    superseded: RecordChanges = {
                        "invalid_at": stamp,
                        "superseded_by": record_id,
                        "updated_at": stamp,
                    }
                    await self._update(handle, target, superseded)
            await self._insert_new(handle, batch)
            if self._journal is not None and batch.inputs:
                superseded_ids = [target for target in supersedes if target is not None]
                data = write_data(
                    "supersede" if superseded_ids else "write",
                    batch.ids,
                    batch.inputs,
                    superseded_ids=superseded_ids,
                    include_content=self._journal.include_content,
                )
                await self._journal_change(handle, write_scope(batch.inputs), data)
        fresh = iter(batch.records())
        return [done if done is not None else next(fresh) for done in results]

    async def get(self, id: str) -> MemoryRecord | None:
        """The record, whatever its validity or expiry (S6); None when absent."""
        self._check_open()
        if not is_storable_id(id):
            return None
        async with self._reading() as handle:
            return (await self._fetch_records(handle, [id])).get(id)

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        """Set ``invalid_at``/``invalid_reason``; a no-op when already invalid (S4)."""
        reason = check_invalid_reason(reason)
        self._check_open()
        if not is_storable_id(id):
            raise MemoryNotFoundError(id)
        async with self._writing() as handle:
            state = await self._fetch_invalid(handle, [id])
            if id not in state:
                raise MemoryNotFoundError(id)
            changed = not state[id]
            if changed:
                stamp = self._clock()
                invalidated: RecordChanges = {
                    "invalid_at": stamp,
                    "invalid_reason": reason,
                    "updated_at": stamp,
                }
                await self._update(handle, id, invalidated)
            if self._journal is not None:
                record = (await self._fetch_records(handle, [id]))[id]
                data = invalidate_data(
                    id, record, reason, include_content=self._journal.include_content
                )
                await self._journal_change(handle, record.scope, {**data, "count": int(changed)})

    async def delete(self, id: str) -> None:
        """Forget the record and its index entries (S5); a missing id is no error."""
        self._check_open()
        if is_storable_id(id):
            await self._delete(id)

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """Filter (S7–S9), then rank or list by recency (S10–S13)."""
        self._check_open()
        started = time.perf_counter()
        terms = [] if query.is_listing else query_terms(query.query or "")
        matches_nothing = (query.limit == 0 or (query.kinds is not None and not query.kinds)) or (
            not query.is_listing and not terms and self._searching_by() == "keyword"
        )
        hits = [] if matches_nothing else await self._search(query, terms, self._now())
        if self._journal is not None and self._journal_buffer is not None:
            data = search_data(
                query,
                hits,
                time.perf_counter() - started,
                mode=self._searching_by(),
                include_query_text=self._journal.include_query_text,
            )
            self._journal_buffer.add(envelope(SEARCH_TYPE, query.scope, data, self._now()))
        return hits

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """Insert records exactly as given, atomically; identical existing ones are skipped."""
        check_import_batch(records)
        self._check_open()
        if not records:
            return 0
        async with self._writing() as handle:
            stored = await self._fetch_records(handle, [record.id for record in records])
            fresh = records_to_import(records, stored)
            await self._check_imported_keys(handle, fresh)
            await self._insert(handle, fresh)
        self._clock.observe(newest_timestamp(records))
        return len(fresh)

    async def export_records(
        self, scope: Mapping[str, str] | None = None
    ) -> AsyncIterator[MemoryRecord]:
        """Every record whose scope contains ``scope`` (invalid and expired included),
        ordered by ``(created_at, id)``; needs the ``"export"`` extension."""
        self._check_open()
        scope_filter = canonical_scope(scope or {})
        async for record in self._export(scope_filter):
            yield record

    # --- shared rules -----------------------------------------------------------------

    def _check_open(self) -> None:
        """Raise :class:`StoreUnavailableError` unless the store is open."""
        if not self._is_open:
            raise StoreUnavailableError(
                self.describe().target,
                "the store is not open (use 'async with' or 'await open()')",
            )

    def _new_records(self, inputs: Sequence[MemoryWriteInput]) -> NewRecords:
        """The records a write creates for ``inputs``: an id each from the store's source,
        stamps from one reading of its clock, 1 µs apart in input order."""
        count = len(inputs)
        return NewRecords(inputs, ids_from(self._ids, count), self._clock.readings(count))

    async def _insert_new(self, handle: Handle, batch: NewRecords) -> None:
        """Insert a write's new records; a backend may store them from ``batch``'s
        inputs, ids and stamps and leave building the records for later."""
        await self._insert(handle, batch.records())

    async def _check_imported_keys(self, handle: Handle, records: Sequence[MemoryRecord]) -> None:
        """An imported valid record may not take a key another valid record holds (S16)."""
        keyed = [r for r in records if r.idempotency_key and not r.is_invalidated]
        if not keyed or IDEMPOTENCY_EXTENSION not in self.extensions:
            return
        holders = await self._fetch_keyed(handle, list(map(idempotency_key_of, keyed)))
        claimed: set[IdempotencyKey] = set()
        for record in keyed:
            key = idempotency_key_of(record)
            holder = holders.get(key)
            if key in claimed or (holder is not None and holder.id != record.id):
                raise MemoryConflictError(
                    record.id,
                    f"another valid record holds its idempotency key {record.idempotency_key!r}",
                )
            claimed.add(key)

    async def _check_supersede_targets(self, handle: Handle, targets: Sequence[str]) -> None:
        """Missing → not found; already invalid or named twice in the batch → conflict (S3)."""
        state = await self._fetch_invalid(handle, [t for t in targets if is_storable_id(t)])
        seen: set[str] = set()
        for target in targets:
            if target not in state:
                raise MemoryNotFoundError(target)
            if state[target] or target in seen:
                raise MemoryConflictError(target, "it is already invalidated")
            seen.add(target)

    # --- storage primitives: what a backend implements --------------------------------

    @property
    @abstractmethod
    def _is_open(self) -> bool:
        """True while the store can serve calls (between ``open()`` and ``aclose()``)."""

    @abstractmethod
    def _reading(self) -> AbstractAsyncContextManager[Handle]:
        """A handle to read with, for one call."""

    @abstractmethod
    def _writing(self) -> AbstractAsyncContextManager[Handle]:
        """A write transaction: committed when the block ends, rolled back on an exception.

        Reads made through it must see a state no concurrent writer can change before
        it commits (a write lock, ``SELECT … FOR UPDATE``, an asyncio lock).
        """

    @abstractmethod
    async def _fetch_records(self, handle: Handle, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The stored records among ``ids``, by id; absent ids are left out."""

    async def _fetch_invalid(self, handle: Handle, ids: Sequence[str]) -> dict[str, bool]:
        """For each stored id among ``ids``: whether the record is already invalid.

        The one read behind supersede and invalidate checks, always made through a
        write transaction: what it returns must stay true until that ends. Derived
        from :meth:`_fetch_records`; a backend may override it with a lighter query.
        """
        found = await self._fetch_records(handle, ids)
        return {record_id: record.is_invalidated for record_id, record in found.items()}

    @abstractmethod
    async def _insert(self, handle: Handle, records: Sequence[MemoryRecord]) -> None:
        """Store new records (with their index entries) exactly as given."""

    @abstractmethod
    async def _update(self, handle: Handle, id: str, changes: RecordChanges) -> None:
        """Overwrite the named fields of the stored record ``id`` (see RecordChanges)."""

    @abstractmethod
    async def _delete(self, id: str) -> None:
        """Remove the record and every trace of it; nothing when it is absent."""

    @abstractmethod
    async def _search(
        self, query: MemorySearchQuery, terms: Sequence[str], now: datetime
    ) -> list[MemoryHit]:
        """Hits for a query that may match something: filters S7–S9 (expiry against
        ``now``), then relevance for ``terms`` or, for a listing, recency (S10–S12)."""

    def _export(self, scope: Mapping[str, str]) -> AsyncIterator[MemoryRecord]:
        """Every record whose scope contains ``scope``, oldest first (``"export"`` only)."""
        raise NotImplementedError(f"{type(self).__name__} does not stream its records")

    async def _fetch_keyed(
        self, handle: Handle, keys: Sequence[IdempotencyKey]
    ) -> dict[IdempotencyKey, MemoryRecord]:
        """The not-invalidated records holding ``keys`` (``"idempotency"`` only).

        A key is ``(scope pairs, idempotency_key)``: the record's scope must be exactly
        that scope. Read through the write transaction, and what it returns (absence
        included) must stay true until it commits: a unique index, a lock on the keys.
        """
        raise NotImplementedError(f"{type(self).__name__} does not look records up by key")
