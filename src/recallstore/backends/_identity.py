"""``store_id``: the id a store names itself by in telemetry (``gen_ai.memory.store.id``).

``BaseMemoryStore`` inherits it; a backend sets ``_store_id`` when it opens, from
:func:`~recallstore.store.store_id_from` and what makes its storage itself (for a
durable store, the instant its schema was first created, kept in its own database).
"""

from __future__ import annotations

__all__ = ["StoreIdentity"]


class StoreIdentity:
    """The ``store_id`` property of :class:`~recallstore.store.SupportsStoreId`."""

    _store_id: str | None = None

    @property
    def store_id(self) -> str | None:
        """The same for every opening of this store, different for another store; None
        until the store has been opened (docs/observability.md, "The store id")."""
        return self._store_id
