"""The ``"promote"`` extension through ``ObservedMemoryStore``: each corroborate, promote
and demote in a span of its own (``update_memory``) with its ``agent.memory.learn``
event, and each rendered overlay as ``agent.memory.learned`` (issue 39)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from recallstore.errors import ConfigurationError
from recallstore.events._event_type import StoreCall, StoreOperation
from recallstore.events.bus import EventBus
from recallstore.events.learning import (
    MemoryLearnedData,
    MemoryLearnedEvent,
    MemoryLearnEvent,
    learned_data,
)
from recallstore.events.models import MemoryEvent
from recallstore.records import MemoryRecord, MemoryTarget, Provenance
from recallstore.store import (
    PROMOTE_EXTENSION,
    Corroboration,
    LedgerEntry,
    MemoryStore,
    Promotion,
    PromotionGate,
    SupportsPromotion,
)

if TYPE_CHECKING:
    from recallstore.events.observed import OperationTrace, StoreTelemetry
    from recallstore.learning import Learned

__all__ = ["ObservesLearning"]

_T = TypeVar("_T")


class ObservesLearning:
    """``ObservedMemoryStore``'s half of the ``"promote"`` extension."""

    _store: MemoryStore
    bus: EventBus
    telemetry: StoreTelemetry | None

    if TYPE_CHECKING:

        def _operation(
            self, operation: StoreOperation, *, record_id: str | None = None
        ) -> AbstractContextManager[OperationTrace]: ...

        def _publish(
            self,
            trace: OperationTrace,
            model: type[MemoryEvent],
            scope: Mapping[str, str],
            data: Mapping[str, Any],
        ) -> None: ...

        def _finished(
            self, trace: OperationTrace, call: StoreCall, *, failed: bool = False
        ) -> None: ...

        def _declared(self, trace: OperationTrace, call: StoreCall) -> None: ...

        @staticmethod
        def _with_context(event: MemoryEvent) -> MemoryEvent: ...

        def _failed(self, what: str) -> None: ...

    def _learning(self) -> SupportsPromotion:
        store = self._store
        if not isinstance(store, SupportsPromotion) or (
            PROMOTE_EXTENSION not in store.capabilities().extensions
        ):
            raise ConfigurationError(
                f"{type(store).__name__} lacks the '{PROMOTE_EXTENSION}' extension"
            )
        return store

    async def _traced(
        self,
        operation: StoreOperation,
        arguments: dict[str, Any],
        call: Callable[[], Awaitable[_T]],
    ) -> _T:
        scope = dict(arguments["scope"])
        with self._operation(operation, record_id=arguments["id"]) as trace:
            try:
                result = await call()
            except Exception as exc:
                failure = {
                    "action": operation,
                    "ok": False,
                    "error": type(exc).__name__,
                    "record_ids": [arguments["id"]],
                }
                self._publish(trace, MemoryLearnEvent, scope, failure)
                self._finished(trace, StoreCall(operation, arguments, None), failed=True)
                raise
            self._declared(trace, StoreCall(operation, arguments, result))
        return result

    async def corroborate(
        self,
        scope: Mapping[str, str],
        id: str,
        evidence: Provenance,
        *,
        actor: str,
        reason: str,
    ) -> MemoryRecord:
        """The wrapped store's ``corroborate``, traced; emits ``agent.memory.learn``."""
        store = self._learning()
        arguments = {"scope": dict(scope), "id": id, "evidence": evidence}
        return await self._traced(
            "corroborate",
            arguments,
            lambda: store.corroborate(scope, id, evidence, actor=actor, reason=reason),
        )

    async def corroborate_all(
        self, scope: Mapping[str, str], items: Sequence[Corroboration], *, actor: str
    ) -> list[MemoryRecord]:
        """The wrapped store's ``corroborate_all`` (one transaction). No span of its own:
        the store journals each row as ``agent.memory.learn``."""
        return await self._learning().corroborate_all(scope, items, actor=actor)

    async def withdraw(
        self,
        scope: Mapping[str, str],
        id: str,
        evidence: Provenance,
        *,
        actor: str,
        reason: str,
    ) -> MemoryRecord:
        """The wrapped store's ``withdraw``. No span of its own: the store journals the
        row as ``agent.memory.learn``."""
        return await self._learning().withdraw(scope, id, evidence, actor=actor, reason=reason)

    async def withdraw_all(
        self, scope: Mapping[str, str], items: Sequence[Corroboration], *, actor: str
    ) -> list[MemoryRecord]:
        """The wrapped store's ``withdraw_all`` (one transaction). No span of its own."""
        return await self._learning().withdraw_all(scope, items, actor=actor)

    async def promote(
        self,
        scope: Mapping[str, str],
        id: str,
        target: MemoryTarget,
        *,
        gate: PromotionGate,
        actor: str,
        reason: str,
        approved_by: str | None = None,
    ) -> Promotion:
        """The wrapped store's ``promote`` (through ``gate``), traced; emits
        ``agent.memory.learn`` (``ok`` false with ``PromotionRefusedError`` when the gate
        refused)."""
        store = self._learning()
        arguments = {"scope": dict(scope), "id": id, "target": target}
        return await self._traced(
            "promote",
            arguments,
            lambda: store.promote(
                scope, id, target, gate=gate, actor=actor, reason=reason, approved_by=approved_by
            ),
        )

    async def demote(
        self, scope: Mapping[str, str], id: str, *, actor: str, reason: str
    ) -> LedgerEntry:
        """The wrapped store's ``demote``, traced; emits ``agent.memory.learn``."""
        store = self._learning()
        arguments = {"scope": dict(scope), "id": id}
        return await self._traced(
            "demote", arguments, lambda: store.demote(scope, id, actor=actor, reason=reason)
        )

    async def promotions(self, scope: Mapping[str, str]) -> list[Promotion]:
        """The wrapped store's ``promotions`` (a read: no event)."""
        return await self._learning().promotions(scope)

    async def ledger(
        self, scope: Mapping[str, str] | None = None, *, record_id: str | None = None
    ) -> list[LedgerEntry]:
        """The wrapped store's ``ledger`` (a read: no event)."""
        return await self._learning().ledger(scope, record_id=record_id)

    def observe_learned(self, learned: Learned) -> None:
        """Emit ``agent.memory.learned`` for an overlay assembled over this store (a log
        record in the active span)."""
        try:
            data = MemoryLearnedData.model_validate(learned_data(learned))
            event = self._with_context(MemoryLearnedEvent(scope=learned.scope, data=data))
            if self.bus.numbered_by == "bus":
                event = self.bus.publish(event)
            if self.telemetry is not None:
                self.telemetry.emit(event)
        except Exception:
            self._failed("learned")
