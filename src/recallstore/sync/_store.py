"""``SyncMemoryStore``: a store opened on a background loop, with blocking methods."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Self

from recallstore._background_loop import BackgroundLoop
from recallstore.errors import ConfigurationError
from recallstore.load import load_memory_store
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryTarget,
    MemoryWriteInput,
    Provenance,
)
from recallstore.store import (
    FORGET_EXTENSION,
    PROMOTE_EXTENSION,
    Clock,
    Corroboration,
    LedgerEntry,
    MemoryStore,
    Promotion,
    PromotionGate,
    SupportsForget,
    SupportsPromotion,
    store_clock,
)
from recallstore.sync._portable import PortableStore

__all__ = ["SyncMemoryStore"]


class SyncMemoryStore:
    """A :class:`~recallstore.store.MemoryStore` with blocking methods.

    ``store`` is a store that is not open yet, or what
    :func:`~recallstore.load.load_memory_store` takes (a path, ``memory:``, a URL).
    It is opened here, on ``loop`` (default: a :class:`BackgroundLoop` of its own, closed
    with the store). The methods are the protocol's six, ``forget`` and the ``promote`` extension's
    (``corroborate``, ``corroborate_all``, ``withdraw``, ``withdraw_all``, ``promote``,
    ``demote``, ``promotions``, ``ledger``), with the same
    semantics and errors; the functions of :mod:`recallstore.sync` (``capture``,
    ``consolidate``, ...) take it where the async ones take a store. ``store`` and
    ``loop`` stay reachable for async code that shares them; :attr:`portable` is the
    store for async code on another loop.
    """

    def __init__(
        self, store: MemoryStore | str | os.PathLike[str], *, loop: BackgroundLoop | None = None
    ) -> None:
        self.store: MemoryStore = (
            load_memory_store(store) if isinstance(store, (str, os.PathLike)) else store
        )
        """The async store underneath; its coroutines must run on :attr:`loop`."""
        self._owns_loop = loop is None
        self.loop = BackgroundLoop() if loop is None else loop
        """The background loop the store was opened on."""
        try:
            self.loop.run(self.store.__aenter__())
        except BaseException:
            if self._owns_loop:
                self.loop.close()
            raise
        # Closed with the loop if close() is never called: when the loop is collected
        # (a re-run notebook cell), or closed.
        self.loop.adopt(self.store)

    @property
    def clock(self) -> Clock:
        """The async store's clock (:func:`~recallstore.store.store_clock`)."""
        return store_clock(self.store)

    def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """Write all ``inputs`` atomically; the records in input order."""
        return self.loop.run(self.store.write(inputs))

    def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """Relevance-ordered hits for ``query`` (a recency listing when its text is blank)."""
        return self.loop.run(self.store.search(query))

    def get(self, id: str) -> MemoryRecord | None:
        """The record with ``id`` whatever its validity or expiry, or None."""
        return self.loop.run(self.store.get(id))

    def invalidate(self, id: str, reason: str | None = None) -> None:
        """Mark a record invalid (a no-op when it already is); missing → not found."""
        self.loop.run(self.store.invalidate(id, reason))

    def delete(self, id: str) -> None:
        """Forget a record completely; missing → no error."""
        self.loop.run(self.store.delete(id))

    def capabilities(self) -> MemoryStoreCapabilities:
        """What the backend offers."""
        return self.store.capabilities()

    def forget(self, scope: Mapping[str, str]) -> int:
        """Erase every record whose scope contains ``scope`` in one transaction; how many.

        The store's ``"forget"`` extension (administrative, never offered to a model):
        an empty scope raises :class:`~recallstore.errors.MemoryValidationError` and
        deletes nothing; a store without it raises
        :class:`~recallstore.errors.ConfigurationError`.
        """
        if FORGET_EXTENSION not in self.store.capabilities().extensions or not isinstance(
            self.store, SupportsForget
        ):
            raise ConfigurationError(
                f"{type(self.store).__name__} lacks the {FORGET_EXTENSION!r} extension, "
                "so it cannot forget a scope"
            )
        return self.loop.run(self.store.forget(scope))

    def corroborate(
        self,
        scope: Mapping[str, str],
        id: str,
        evidence: Provenance,
        *,
        actor: str,
        reason: str,
    ) -> MemoryRecord:
        """``evidence`` added to the ``supports`` of record ``id`` (the ``"promote"``
        extension, :class:`~recallstore.store.SupportsPromotion`); a ledger row."""
        store = self._promoting()
        return self.loop.run(store.corroborate(scope, id, evidence, actor=actor, reason=reason))

    def corroborate_all(
        self, scope: Mapping[str, str], items: Sequence[Corroboration], *, actor: str
    ) -> list[MemoryRecord]:
        """Several corroborations in one transaction, all or none; a ledger row each."""
        return self.loop.run(self._promoting().corroborate_all(scope, items, actor=actor))

    def withdraw(
        self,
        scope: Mapping[str, str],
        id: str,
        evidence: Provenance,
        *,
        actor: str,
        reason: str,
    ) -> MemoryRecord:
        """``evidence`` taken back out of the ``supports`` of record ``id`` (the inverse
        of the corroborate that added it); a ledger row."""
        store = self._promoting()
        return self.loop.run(store.withdraw(scope, id, evidence, actor=actor, reason=reason))

    def withdraw_all(
        self, scope: Mapping[str, str], items: Sequence[Corroboration], *, actor: str
    ) -> list[MemoryRecord]:
        """Several withdrawals in one transaction, all or none; a ledger row each."""
        return self.loop.run(self._promoting().withdraw_all(scope, items, actor=actor))

    def promote(
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
        """Record ``id`` made a standing instruction of ``target`` if ``gate`` allows it
        (:class:`~recallstore.store.PromotionRefusedError` otherwise); a ledger row."""
        store = self._promoting()
        return self.loop.run(
            store.promote(
                scope, id, target, gate=gate, actor=actor, reason=reason, approved_by=approved_by
            )
        )

    def demote(self, scope: Mapping[str, str], id: str, *, actor: str, reason: str) -> LedgerEntry:
        """Record ``id``'s promotion taken back; the prompt is as before it; a ledger row."""
        store = self._promoting()
        return self.loop.run(store.demote(scope, id, actor=actor, reason=reason))

    def promotions(self, scope: Mapping[str, str]) -> list[Promotion]:
        """The promoted records of exactly ``scope``, oldest first."""
        return self.loop.run(self._promoting().promotions(scope))

    def ledger(
        self, scope: Mapping[str, str] | None = None, *, record_id: str | None = None
    ) -> list[LedgerEntry]:
        """The evolution ledger's rows whose scope contains ``scope``, oldest first."""
        return self.loop.run(self._promoting().ledger(scope, record_id=record_id))

    def _promoting(self) -> SupportsPromotion:
        if PROMOTE_EXTENSION not in self.store.capabilities().extensions or not isinstance(
            self.store, SupportsPromotion
        ):
            raise ConfigurationError(
                f"{type(self.store).__name__} lacks the {PROMOTE_EXTENSION!r} extension, "
                "so it cannot corroborate, promote or demote"
            )
        return self.store

    @property
    def portable(self) -> MemoryStore:
        """This store as an async :class:`~recallstore.store.MemoryStore` that any event
        loop may await, each call run on :attr:`loop`: for an adapter whose framework
        runs its own loop in a blocking entry point (``agent.run_sync``,
        ``Runner.run_sync``). Its life is this store's; its ``capabilities()`` keep only
        the ``idempotency`` extension."""
        return PortableStore(self.store, self.loop)

    def close(self) -> None:
        """Close the store, then its loop when it is the store's own (idempotent).

        Calls still running on other threads are cancelled and raise
        :class:`~recallstore.errors.StoreUnavailableError`. In a process forked after
        the store was opened, nothing is closed: the connections are the parent's.
        """
        if self.loop.closed or self.loop.forked:
            if self._owns_loop:
                self.loop.close()
            return
        self.loop.release(self.store)
        try:
            self.loop.run(self.store.__aexit__(None, None, None))
        finally:
            if self._owns_loop:
                self.loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
