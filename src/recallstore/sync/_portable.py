"""An async ``MemoryStore`` over a :class:`SyncMemoryStore` that any event loop may await.

A framework's blocking entry point (``agent.run_sync``, ``Runner.run_sync``, a tool run
with ``asyncio.run`` in a worker thread) runs the adapter's async code on an event loop
of its own. The store's connections belong to the background loop they were opened on,
so each call is sent there (:meth:`BackgroundLoop.arun`) and awaited, never run on the
caller's loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Final, Self

from recallstore._background_loop import BackgroundLoop
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
)
from recallstore.store import IDEMPOTENCY_EXTENSION, Clock, MemoryStore, store_clock

__all__ = ["PortableStore"]

_FORWARDED: Final = frozenset({IDEMPOTENCY_EXTENSION})
"""The extensions a portable store keeps: the ones that are no method of their own
(an idempotency key is a field of the write). Other extensions are the sync store's."""


class PortableStore:
    """The six protocol calls of ``store``, each run on ``loop`` whatever loop awaits it.

    Its life is the sync store's: ``async with`` opens and closes nothing, and after
    the sync store is closed every call raises
    :class:`~recallstore.errors.StoreUnavailableError`. ``capabilities()`` are the
    store's, with only the extensions that need no method of their own (``idempotency``).
    """

    def __init__(self, store: MemoryStore, loop: BackgroundLoop) -> None:
        self._store = store
        self._loop = loop
        self.clock: Clock = store_clock(store)
        """The store's clock (:func:`~recallstore.store.store_clock`)."""

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """Write all ``inputs`` atomically; the records in input order."""
        return await self._loop.arun(self._store.write(inputs))

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """Relevance-ordered hits for ``query`` (a recency listing when its text is blank)."""
        return await self._loop.arun(self._store.search(query))

    async def get(self, id: str) -> MemoryRecord | None:
        """The record with ``id`` whatever its validity or expiry, or None."""
        return await self._loop.arun(self._store.get(id))

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        """Mark a record invalid (a no-op when it already is); missing → not found."""
        await self._loop.arun(self._store.invalidate(id, reason))

    async def delete(self, id: str) -> None:
        """Forget a record completely; missing → no error."""
        await self._loop.arun(self._store.delete(id))

    def capabilities(self) -> MemoryStoreCapabilities:
        """The store's capabilities, with the extensions a portable store keeps."""
        found = self._store.capabilities()
        kept = found.extensions & _FORWARDED
        return found.model_copy(update={"extensions": kept})

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None
