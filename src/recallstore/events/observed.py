"""``ObservedMemoryStore``: a MemoryStore that makes every call observable.

It wraps any store, emits ``agent.memory.write`` for every mutation and
``agent.memory.search`` for every search, and, as a ``RecallObserver``, emits
``agent.memory.recall`` when ``assemble_recall`` runs over it. Conversation and run
ids come from ``recallstore.context.current_call_context()``. An optional
``StoreTelemetry`` (e.g. ``recallstore.events.otel.OtelInstrumentation``) wraps each
store call in a span and is handed each event inside it.

Failed calls are emitted too, with ``ok: false`` and the exception type in ``error``;
a failed call changed nothing, and its exception reaches the caller unchanged.
Observability never breaks a store call: a failure to build or publish an event is
logged and counted in :attr:`ObservedMemoryStore.observer_failures`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

from recallstore.backends.journal import (
    delete_data,
    invalidate_data,
    recall_data,
    search_data,
    write_data,
    write_scope,
)
from recallstore.context import current_call_context
from recallstore.errors import ConfigurationError
from recallstore.events._observed_learning import ObservesLearning
from recallstore.events.bus import EventBus
from recallstore.events.catalogue import StoreCall, StoreOperation, declared_emitters
from recallstore.events.models import (
    MemoryEvent,
    MemoryRecallData,
    MemoryRecallEvent,
    MemorySearchEvent,
    MemoryWriteEvent,
    WriteOperation,
)
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
    SearchMode,
)
from recallstore.store import (
    EXPORT_EXTENSION,
    FORGET_EXTENSION,
    IMPORT_EXTENSION,
    JOURNAL_EXTENSION,
    PROMOTE_EXTENSION,
    REVISE_EXTENSION,
    Clock,
    MemoryStore,
    SupportsExportRecords,
    SupportsForget,
    SupportsPromotion,
    SupportsStoreId,
    common_scope,
    store_clock,
)

if TYPE_CHECKING:
    from recallstore.recall import Recall

__all__ = ["ObservedMemoryStore", "OperationTrace", "StoreOperation", "StoreTelemetry"]

_logger = logging.getLogger("recallstore.events")


class OperationTrace(Protocol):
    """The telemetry handle of one store call in progress."""

    def record(self, event: MemoryEvent) -> None:
        """The call's event, published; called inside the call (at most once)."""
        ...

    def finished(self, call: StoreCall, *, failed: bool, store_id: str | None) -> None:
        """The call, its arguments and result (``failed``: it raised, the result is
        None), and the id of the store it ran on; once per call, after :meth:`record`."""
        ...


class StoreTelemetry(Protocol):
    """A tracer for store calls. Implementations must never raise."""

    def operation(
        self, operation: StoreOperation, *, record_id: str | None = None
    ) -> AbstractContextManager[OperationTrace]:
        """Enter around one store call; on exit, an exception from the call is recorded
        (never suppressed)."""
        ...

    def emit(self, event: MemoryEvent) -> None:
        """An event that belongs to no store call (a recall), in the current context."""
        ...


class _NoTrace:
    def record(self, event: MemoryEvent) -> None:
        pass

    def finished(self, call: StoreCall, *, failed: bool, store_id: str | None) -> None:
        pass


_NO_TRACE = _NoTrace()


class ObservedMemoryStore(ObservesLearning):
    """Wraps ``store`` so every call publishes an event on ``bus``.

    ``include_content`` adds record content (and invalidation reasons) to write events;
    ``include_query_text`` adds search and recall query text. Both default off: events
    carry ids, kinds, counts and sizes only.
    """

    def __init__(
        self,
        store: MemoryStore,
        bus: EventBus,
        *,
        include_content: bool = False,
        include_query_text: bool = False,
        telemetry: StoreTelemetry | None = None,
    ) -> None:
        self._store = store
        self.bus = bus
        self.include_content = include_content
        self.include_query_text = include_query_text
        self.telemetry = telemetry
        self.observer_failures = 0
        self._search_mode: SearchMode | None = None

    @property
    def inner(self) -> MemoryStore:
        """The wrapped store."""
        return self._store

    @property
    def clock(self) -> Clock:
        """The wrapped store's clock (:func:`~recallstore.store.store_clock`)."""
        return store_clock(self._store)

    async def __aenter__(self) -> Self:
        await self._store.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._store.__aexit__(exc_type, exc, tb)

    def capabilities(self) -> MemoryStoreCapabilities:
        """The wrapped store's capabilities, less the extensions this wrapper does not offer.

        ``"export"`` is kept when the wrapped store has it (``export_records`` passes
        through), and so are ``"forget"`` (traced: :meth:`forget`) and ``"promote"``
        (traced: :meth:`corroborate`, :meth:`promote`, :meth:`demote`); ``"import"`` never
        is: an import is a mutation no event could describe record by record, so
        restores go to the unwrapped store (:attr:`inner`). Nor is ``"revise"``:
        consolidation plans are applied to the unwrapped store, whose journal records
        one event per operation.
        """
        inner = self._store.capabilities()
        # The journal is the wrapped store's: a JournalFeed reads it from ``inner``.
        dropped = {IMPORT_EXTENSION, JOURNAL_EXTENSION, REVISE_EXTENSION}
        extensions = set(inner.extensions) - dropped
        if not isinstance(self._store, SupportsExportRecords):
            extensions.discard(EXPORT_EXTENSION)
        if not isinstance(self._store, SupportsForget):
            extensions.discard(FORGET_EXTENSION)
        if not isinstance(self._store, SupportsPromotion):
            extensions.discard(PROMOTE_EXTENSION)
        return inner.model_copy(update={"extensions": frozenset(extensions)})

    def export_records(self, scope: Mapping[str, str] | None = None) -> AsyncIterator[MemoryRecord]:
        """The wrapped store's ``export_records`` (a host's bulk read: no event is emitted).

        Raises :class:`~recallstore.errors.ConfigurationError` when the wrapped store lacks
        the ``"export"`` extension.
        """
        store = self._store
        if not isinstance(store, SupportsExportRecords) or (
            EXPORT_EXTENSION not in store.capabilities().extensions
        ):
            raise ConfigurationError(
                f"{type(store).__name__} lacks the '{EXPORT_EXTENSION}' extension"
            )
        return store.export_records(scope)

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """Write through; emit ``agent.memory.write`` (operation ``write``, or
        ``supersede`` when any input supersedes a record)."""
        batch = list(inputs)
        superseded = tuple(inp.supersedes for inp in batch if inp.supersedes is not None)
        operation: WriteOperation = "supersede" if superseded else "write"
        keyed = any(inp.idempotency_key is not None for inp in batch)
        call: StoreOperation = "upsert" if keyed and not superseded else operation
        with self._operation(call) as trace:
            try:
                records = await self._store.write(batch)
            except Exception as exc:
                failure = {"ok": False, "error": type(exc).__name__}
                scope = common_scope(inp.scope for inp in batch)
                data = {"operation": operation, "superseded_ids": superseded, **failure}
                self._publish(trace, MemoryWriteEvent, scope, data)
                self._finished(trace, StoreCall(call, {"inputs": batch}, None), failed=True)
                raise
            data = write_data(
                operation,
                [record.id for record in records],
                records,
                superseded_ids=superseded,
                include_content=self.include_content,
            )
            self._publish(trace, MemoryWriteEvent, write_scope(records), data)
            self._declared(trace, StoreCall(call, {"inputs": batch}, records))
        return records

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        """Invalidate through; emit ``agent.memory.write`` (operation ``invalidate``)."""
        with self._operation("invalidate", record_id=id) as trace:
            before = await self._peek(id)
            data = invalidate_data(id, before, reason, include_content=self.include_content)
            scope = before.scope if before else {}
            arguments = {"id": id, "reason": reason}
            try:
                await self._store.invalidate(id, reason)
            except Exception as exc:
                failure = {"ok": False, "error": type(exc).__name__}
                self._publish(trace, MemoryWriteEvent, scope, {**data, **failure})
                self._finished(trace, StoreCall("invalidate", arguments, None), failed=True)
                raise
            changed = before is not None and not before.is_invalidated
            self._publish(trace, MemoryWriteEvent, scope, {**data, "count": int(changed)})
            self._declared(trace, StoreCall("invalidate", arguments, None))

    async def delete(self, id: str) -> None:
        """Delete through; emit ``agent.memory.write`` (operation ``delete``)."""
        with self._operation("delete", record_id=id) as trace:
            before = await self._peek(id)
            data = delete_data(id, before)
            scope = before.scope if before else {}
            try:
                await self._store.delete(id)
            except Exception as exc:
                failure = {"ok": False, "error": type(exc).__name__}
                self._publish(trace, MemoryWriteEvent, scope, {**data, **failure})
                self._finished(trace, StoreCall("delete", {"id": id}, None), failed=True)
                raise
            self._publish(
                trace, MemoryWriteEvent, scope, {**data, "count": int(before is not None)}
            )
            self._declared(trace, StoreCall("delete", {"id": id}, None))

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """Search through; emit ``agent.memory.search``."""
        with self._operation("search") as trace:
            started = time.perf_counter()
            try:
                hits = await self._store.search(query)
            except Exception as exc:
                elapsed = time.perf_counter() - started
                failure = {"ok": False, "error": type(exc).__name__}
                data = self._search_data(query, [], elapsed, failure)
                self._publish(trace, MemorySearchEvent, query.scope, data)
                self._finished(trace, StoreCall("search", {"query": query}, None), failed=True)
                raise
            elapsed = time.perf_counter() - started
            data = self._search_data(query, hits, elapsed, {})
            self._publish(trace, MemorySearchEvent, query.scope, data)
            self._declared(trace, StoreCall("search", {"query": query}, hits))
        return hits

    async def get(self, id: str) -> MemoryRecord | None:
        """Get through. Traced when telemetry is set; no built-in event (reads by id are
        not searches), but an event type declared for ``get`` is emitted."""
        with self._operation("get", record_id=id) as trace:
            try:
                record = await self._store.get(id)
            except Exception:
                self._finished(trace, StoreCall("get", {"id": id}, None), failed=True)
                raise
            self._declared(trace, StoreCall("get", {"id": id}, record))
            return record

    async def forget(self, scope: Mapping[str, str]) -> int:
        """The wrapped store's ``forget(scope)`` (the ``"forget"`` extension), traced as a
        ``delete_memory`` span with no record id and the count; emits
        ``agent.memory.write`` (operation ``delete``, no ids: a store with a journal
        journals the deleted ids itself). Raises
        :class:`~recallstore.errors.ConfigurationError` without the extension."""
        store = self._store
        if not isinstance(store, SupportsForget) or (
            FORGET_EXTENSION not in store.capabilities().extensions
        ):
            raise ConfigurationError(
                f"{type(store).__name__} lacks the '{FORGET_EXTENSION}' extension"
            )
        pairs = dict(scope)
        with self._operation("forget") as trace:
            data: dict[str, Any] = {"operation": "delete"}
            try:
                removed = await store.forget(pairs)
            except Exception as exc:
                failure = {"ok": False, "error": type(exc).__name__}
                self._publish(trace, MemoryWriteEvent, pairs, {**data, **failure})
                self._finished(trace, StoreCall("forget", {"scope": pairs}, None), failed=True)
                raise
            self._publish(trace, MemoryWriteEvent, pairs, {**data, "count": removed})
            self._declared(trace, StoreCall("forget", {"scope": pairs}, removed))
        return removed

    def observe_recall(self, recall: Recall) -> None:
        """Emit ``agent.memory.recall`` for a recall assembled over this store."""
        try:
            data = MemoryRecallData.model_validate(
                recall_data(recall, include_query_text=self.include_query_text)
            )
            event = self._with_context(MemoryRecallEvent(scope=recall.scope, data=data))
            if self.bus.numbered_by == "bus":
                event = self.bus.publish(event)
            if self.telemetry is not None:
                self.telemetry.emit(event)
        except Exception:
            self._failed("recall")
        observe = getattr(self._store, "observe_recall", None)
        if callable(observe):
            observe(recall)

    def _operation(
        self, operation: StoreOperation, *, record_id: str | None = None
    ) -> AbstractContextManager[OperationTrace]:
        if self.telemetry is None:
            return nullcontext(_NO_TRACE)
        return self.telemetry.operation(operation, record_id=record_id)

    async def _peek(self, id: str) -> MemoryRecord | None:
        # The record's scope and kind before the change; the call itself reports failures.
        try:
            return await self._store.get(id)
        except Exception:
            return None

    def _search_data(
        self,
        query: MemorySearchQuery,
        hits: list[MemoryHit],
        elapsed: float,
        outcome: Mapping[str, Any],
    ) -> dict[str, Any]:
        data = search_data(
            query, hits, elapsed, mode=self._mode(), include_query_text=self.include_query_text
        )
        return {**data, **outcome}

    def _mode(self) -> SearchMode:
        if self._search_mode is None:
            self._search_mode = self._store.capabilities().search
        return self._search_mode

    def _publish(
        self,
        trace: OperationTrace,
        model: type[MemoryEvent],
        scope: Mapping[str, str],
        data: Mapping[str, Any],
    ) -> None:
        """Build the call's ``model`` event from ``data``, publish it and hand it to the
        trace; any failure is counted, never raised."""
        try:
            event = self._with_context(model.model_validate({"scope": scope, "data": data}))
            if self.bus.numbered_by == "bus":
                # A journal-fed bus gets this call's event from the journal instead.
                event = self.bus.publish(event)
        except Exception:
            self._failed("publish")
            return
        try:
            trace.record(event)
        except Exception:
            self._failed("telemetry")

    def _finished(self, trace: OperationTrace, call: StoreCall, *, failed: bool = False) -> None:
        """Hand the finished ``call`` to its trace, with the store's id."""
        store_id = self._store.store_id if isinstance(self._store, SupportsStoreId) else None
        try:
            trace.finished(call, failed=failed, store_id=store_id)
        except Exception:
            self._failed("telemetry")

    def _declared(self, trace: OperationTrace, call: StoreCall) -> None:
        """Publish the events the catalogue declares for the successful ``call``
        (``EventType.emit``), then hand it to the trace; a declaration that fails is
        counted in ``observer_failures``, never raised."""
        self._finished(trace, call)
        for entry in declared_emitters(call.operation):
            try:
                emitted = entry.emit(call) if entry.emit is not None else None
            except Exception:
                self._failed(entry.name)
                continue
            if emitted is not None:
                scope, data = emitted
                self._publish(trace, entry.model, scope, data)

    @staticmethod
    def _with_context(event: MemoryEvent) -> MemoryEvent:
        context = current_call_context()
        return event.model_copy(
            update={"conversation_id": context.conversation_id, "run_id": context.run_id}
        )

    def _failed(self, what: str) -> None:
        self.observer_failures += 1
        _logger.exception("could not emit a memory event (%s); the store call was unaffected", what)
