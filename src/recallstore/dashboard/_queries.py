"""What the lens reads from a store: scope filters from query strings, supersede chains.

Pure recallstore code (no web framework), so it is tested without a server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from recallstore.errors import MemoryValidationError
from recallstore.jsonl import iter_records
from recallstore.records import (
    MAX_LIMIT,
    MAX_REASON_CHARS,
    MemoryRecord,
    MemorySearchQuery,
    check_invalid_reason,
    parse_scope_pairs,
)
from recallstore.store import EXPORT_EXTENSION, MemoryStore

__all__ = [
    "MAX_CHAIN_STEPS",
    "MAX_REASON_CHARS",
    "ChainLink",
    "SupersedeChain",
    "check_reason",
    "format_scope",
    "parse_scope",
    "supersede_chain",
]

MAX_CHAIN_STEPS = 50
"""How many links the record page follows in each direction before it stops."""

# A comma separates two pairs only when what follows looks like another ``key=``, so a
# value such as ``note=a,b`` survives intact.
_PAIR_SEPARATOR = re.compile(r",\s*(?=[^=,]+=)")


def parse_scope(values: Sequence[str]) -> dict[str, str]:
    """The scope filter named by ``scope`` query values.

    Each value is ``key=value``; one value may hold several pairs separated by commas
    (``tenant=acme, user=u_42``), which is what the page's text field sends. Blank
    values are ignored. A pair without ``=`` or with an empty key raises
    :class:`MemoryValidationError` on field ``scope``.
    """
    pairs = [
        pair.strip()
        for value in values
        for pair in _PAIR_SEPARATOR.split(value.strip())
        if pair.strip()
    ]
    # The text field is typed by a person: spaces around keys and values are not meant.
    return parse_scope_pairs(
        f"{key.strip()}{separator}{part.strip()}"
        for key, separator, part in (pair.partition("=") for pair in pairs)
    )


def check_reason(reason: object) -> str | None:
    """An invalidation reason from a form or JSON body, stripped; None when blank or absent.

    Raises :class:`MemoryValidationError` on field ``reason`` for a non-string or for
    what :func:`recallstore.records.check_invalid_reason` refuses.
    """
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise MemoryValidationError("reason", "must be a string or null", reason)
    return check_invalid_reason(reason.strip() or None)


def format_scope(scope: Mapping[str, str]) -> str:
    """The text-field form of ``scope``: ``key=value`` pairs joined by ``", "``."""
    return ", ".join(f"{key}={value}" for key, value in scope.items())


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
