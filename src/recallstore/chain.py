"""Supersede chains: a record's corrections, walked both ways over any MemoryStore.

The record page of the memory lens and ``recallstore show`` both draw this chain;
it lives here, beside the store protocol it reads through, so neither surface
borrows the other's internals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from recallstore.jsonl import iter_records
from recallstore.records import MAX_LIMIT, MemoryRecord, MemorySearchQuery
from recallstore.store import EXPORT_EXTENSION, MemoryStore

__all__ = ["MAX_CHAIN_STEPS", "ChainLink", "SupersedeChain", "supersede_chain"]

MAX_CHAIN_STEPS = 50
"""How many links a walk follows in each direction before it stops."""


@dataclass(frozen=True, slots=True)
class ChainLink:
    """One record of a supersede chain; ``record`` is None when it was deleted."""

    id: str
    record: MemoryRecord | None


@dataclass(frozen=True, slots=True)
class SupersedeChain:
    """A record's corrections, oldest first: what it replaced, itself, what replaced it."""

    older: tuple[ChainLink, ...]
    current: MemoryRecord
    newer: tuple[ChainLink, ...]

    @property
    def links(self) -> tuple[ChainLink, ...]:
        """The whole chain, oldest first, the current record included."""
        return (*self.older, ChainLink(self.current.id, self.current), *self.newer)

    @property
    def is_single(self) -> bool:
        """True when the record never superseded anything and was never superseded."""
        return not self.older and not self.newer


async def supersede_chain(
    store: MemoryStore, record: MemoryRecord, *, complete: bool = False
) -> SupersedeChain:
    """Walk ``record``'s supersede chain both ways, at most :data:`MAX_CHAIN_STEPS` each.

    Forward links come from ``superseded_by``. The protocol stores no backward link,
    so predecessors are looked for among the records of ``record``'s scope: the newest
    :data:`~recallstore.records.MAX_LIMIT` of them (one listing, cheap enough for a
    page view), or, with ``complete`` and a store that has the ``"export"`` extension,
    all of them.
    """
    seen = {record.id}
    newer: list[ChainLink] = []
    current = record
    while current.superseded_by is not None and len(newer) < MAX_CHAIN_STEPS:
        next_id = current.superseded_by
        if next_id in seen:
            break
        seen.add(next_id)
        successor = await store.get(next_id)
        newer.append(ChainLink(next_id, successor))
        if successor is None:
            break
        current = successor

    predecessor_of = await _predecessors(store, record.scope, complete=complete)
    older: list[ChainLink] = []
    current = record
    while current.id in predecessor_of and len(older) < MAX_CHAIN_STEPS:
        predecessor = predecessor_of[current.id]
        if predecessor.id in seen:
            break
        seen.add(predecessor.id)
        older.append(ChainLink(predecessor.id, predecessor))
        current = predecessor
    older.reverse()
    return SupersedeChain(older=tuple(older), current=record, newer=tuple(newer))


async def _predecessors(
    store: MemoryStore, scope: Mapping[str, str], *, complete: bool
) -> dict[str, MemoryRecord]:
    """Successor id → the record it superseded, among records whose scope holds ``scope``."""
    if complete and EXPORT_EXTENSION in store.capabilities().extensions:
        return {
            other.superseded_by: other
            async for other in iter_records(store, scope)
            if other.superseded_by is not None
        }
    listing = await store.search(
        MemorySearchQuery(
            scope=dict(scope), include_invalidated=True, include_expired=True, limit=MAX_LIMIT
        )
    )
    return {
        hit.record.superseded_by: hit.record
        for hit in listing
        if hit.record.superseded_by is not None
    }
