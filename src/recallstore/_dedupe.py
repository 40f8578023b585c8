"""The toolbox's write-time duplicate check: an equal valid record of exactly one scope.

``ScopedMemory.save`` looks for a valid record whose scope is exactly the conversation's
scope and whose content has the same normal form (:mod:`recallstore.sameness`); when
there is none, the write carries an idempotency key derived from that normal form, so
two concurrent equal saves leave one row on a store with the ``"idempotency"``
extension (S16 makes a key unique per exact scope among valid records). The store
protocol itself does not merge equal writes: a direct ``store.write`` caller gets a new
record for every input (docs/agent-surface.md says why).
"""

from __future__ import annotations

from collections.abc import Mapping

from recallstore.records import MAX_CONTENT_CHARS, MemoryRecord, MemorySearchQuery, MemoryWriteInput
from recallstore.sameness import content_key, normal_form
from recallstore.store import IDEMPOTENCY_EXTENSION, MemoryStore

__all__ = ["equal_valid_record", "keyed_by_content"]

_CANDIDATES = 50
"""How many best keyword hits are compared; an equal record matches every query word."""


async def equal_valid_record(
    store: MemoryStore, scope: Mapping[str, str], content: str
) -> MemoryRecord | None:
    """The newest valid, unexpired record of exactly ``scope`` whose content equals
    ``content`` after normalising, or None."""
    wanted = normal_form(content)
    text = content[:MAX_CONTENT_CHARS]
    query = MemorySearchQuery(query=text, scope=dict(scope), limit=_CANDIDATES)
    equal = [
        hit.record
        for hit in await store.search(query)
        if hit.record.scope == query.scope and normal_form(hit.record.content) == wanted
    ]
    return max(equal, key=lambda record: (record.created_at, record.id), default=None)


def keyed_by_content(store: MemoryStore, entry: MemoryWriteInput) -> MemoryWriteInput:
    """``entry`` with its content's idempotency key, when the store takes keys and the
    entry has none; unchanged otherwise."""
    if entry.idempotency_key is not None:
        return entry
    if IDEMPOTENCY_EXTENSION not in store.capabilities().extensions:
        return entry
    return entry.model_copy(update={"idempotency_key": content_key(entry.content)})
