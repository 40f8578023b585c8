"""Shared helpers of the consolidation tests: scopes, snapshots of a store, reachability."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from recallstore.records import MAX_LIMIT, MemoryRecord, MemorySearchQuery
from recallstore.store import MemoryStore

QUERIES = (None, "tea", "lisbon name", "chinese food love hate", "ana")


def new_scope() -> dict[str, str]:
    """A scope no other example uses (Postgres examples share one schema)."""
    return {"tenant": f"t{uuid.uuid4().hex[:8]}", "user": "ana"}


async def everything(store: MemoryStore, scope: Mapping[str, str]) -> dict[str, MemoryRecord]:
    """Every record whose scope contains ``scope``, by id."""
    query = MemorySearchQuery(
        scope=dict(scope), limit=MAX_LIMIT, include_invalidated=True, include_expired=True
    )
    return {hit.record.id: hit.record for hit in await store.search(query)}


async def search_bytes(store: MemoryStore, scope: Mapping[str, str]) -> list[str]:
    """Several searches and listings of ``scope``, as JSON text: byte-comparable."""
    results: list[str] = []
    for text in QUERIES:
        for invalid in (False, True):
            query = MemorySearchQuery(
                query=text, scope=dict(scope), limit=MAX_LIMIT, include_invalidated=invalid
            )
            results.extend(hit.model_dump_json() for hit in await store.search(query))
            results.append("--")
    return results


async def current_of(store: MemoryStore, record: MemoryRecord) -> MemoryRecord | None:
    """The valid record ``record`` leads to: itself, or along superseded_by / duplicate_of."""
    seen: set[str] = set()
    current: MemoryRecord | None = record
    while current is not None and current.is_invalidated and current.id not in seen:
        seen.add(current.id)
        successor = current.superseded_by or _duplicate_of(current.invalid_reason)
        if successor is None:
            return None
        current = await store.get(successor)
    return current if current is not None and not current.is_invalidated else None


def _duplicate_of(reason: str | None) -> str | None:
    marker = ": duplicate of "
    if reason is None or marker not in reason:
        return None
    return reason.split(marker, 1)[1].split(":", 1)[0]
