"""The event journal: a store extension that keeps memory events in the store itself.

A store with the ``"journal"`` extension (:data:`~recallstore.store.JOURNAL_EXTENSION`)
appends one row per event to a table of its own database, so any process that opens
the same database can read and follow them:

* write-type events (write, supersede, invalidate, delete) are appended inside the
  transaction of the change they describe: a change that did not commit has no
  event, and one that did always has its event;
* search and recall events are kept in memory and flushed every
  ``flush_seconds`` (and when the store closes) in a transaction of their own, so a
  search never waits for a disk sync. A crash (or ``kill -9``) loses at most the
  search and recall events of the last ``flush_seconds``; never a write event;
* the event id is the journal's sequence: strictly increasing across processes and
  restarts, never reused after pruning;
* retention: at most ``max_events`` rows (older rows are deleted by the append that
  goes over, a range delete on the primary key) and none older than ``max_age``
  (deleted in small batches by the flusher, between writes).

This module is the storage half and knows nothing of the event models: rows are plain
JSON envelopes. ``recallstore.events.journal`` turns them into events and feeds a bus.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from recallstore.context import current_call_context
from recallstore.errors import ConfigurationError
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    format_timestamp,
)
from recallstore.store import common_scope

if TYPE_CHECKING:
    from recallstore.recall import Recall

__all__ = [
    "DEFAULT_JOURNAL",
    "RECALL_TYPE",
    "SEARCH_TYPE",
    "WRITE_TYPE",
    "JournalEntry",
    "JournalSettings",
    "SupportsJournal",
    "delete_data",
    "envelope",
    "invalidate_data",
    "journal_content",
    "quiet_reads",
    "recall_data",
    "search_data",
    "write_data",
    "write_scope",
]

WRITE_TYPE: Final = "agent.memory.write"
SEARCH_TYPE: Final = "agent.memory.search"
RECALL_TYPE: Final = "agent.memory.recall"


@dataclass(frozen=True)
class JournalSettings:
    """How a store keeps its event journal."""

    max_events: int = 100_000
    """Rows kept at most; the oldest go first."""
    max_age: timedelta = timedelta(days=7)
    """Rows older than this are deleted (by the flusher, in small batches)."""
    flush_seconds: float = 0.25
    """How often buffered search and recall events are written (what a crash can lose)."""
    include_content: bool = False
    """Keep record content and invalidation reasons in write events (opt-in)."""
    include_query_text: bool = False
    """Keep query text in search and recall events (opt-in)."""
    reads: bool = True
    """Journal this store's own searches and recalls. An agent's store does (they are
    memory events the lens shows); a store opened to look at one (the command line's
    reads, the lens) does not, so looking leaves no trace (docs/events.md). Its writes
    are journaled either way."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_events, int) or self.max_events < 1:
            raise ConfigurationError(f"journal max_events must be >= 1, got {self.max_events!r}")
        if not isinstance(self.max_age, timedelta) or self.max_age <= timedelta(0):
            raise ConfigurationError(f"journal max_age must be positive, got {self.max_age!r}")
        if not 0 < self.flush_seconds <= 60:
            raise ConfigurationError(
                f"journal flush_seconds must be in (0, 60], got {self.flush_seconds!r}"
            )


DEFAULT_JOURNAL: Final = JournalSettings()
"""The settings a store opened by URL journals with."""


def quiet_reads(store: object) -> None:
    """Make the unopened ``store`` journal none of its own searches and recalls
    (``reads=False``); its writes stay journaled. A no-op for a store without a journal."""
    settings = getattr(store, "_journal", None)
    if isinstance(settings, JournalSettings):
        store._journal = replace(settings, reads=False)  # type: ignore[attr-defined]
        store._journal_buffer = None  # type: ignore[attr-defined]


def journal_content(store: object) -> bool:
    """Make the unopened ``store`` keep record content and query text in its journal
    (``include_content`` and ``include_query_text``); False when it keeps no journal.

    For ``recallstore serve --include-content``: a journaled store's lens streams the
    journal, so content shows only for writers that keep it there, the lens included.
    """
    settings = getattr(store, "_journal", None)
    if not isinstance(settings, JournalSettings):
        return False
    opted_in = replace(settings, include_content=True, include_query_text=True)
    store._journal = opted_in  # type: ignore[attr-defined]
    return True


@dataclass(frozen=True)
class JournalEntry:
    """One journal row: its id (the journal's sequence) and the event envelope as JSON."""

    id: int
    """The event id: strictly increasing across processes and restarts."""
    envelope: Mapping[str, Any] = field(repr=False)
    """The event without its id: type, timestamp, conversation_id, run_id, scope, data."""

    @property
    def type(self) -> str:
        """The event type (``agent.memory.write`` …)."""
        return str(self.envelope["type"])


@runtime_checkable
class SupportsJournal(Protocol):
    """A store with the ``"journal"`` extension."""

    async def read_journal(self, after: int = 0, limit: int = 1000) -> list[JournalEntry]:
        """Up to ``limit`` retained entries with ids above ``after``, oldest first."""
        ...

    async def journal_bounds(self) -> tuple[int | None, int]:
        """The oldest retained id (None when empty) and the newest id ever appended."""
        ...

    def follow_journal(self, after: int = 0) -> AsyncIterator[JournalEntry]:
        """Every entry after ``after``, then each new one as it commits (never ends)."""
        ...

    async def flush_journal(self) -> None:
        """Write the buffered search and recall events now."""
        ...


def envelope(
    event_type: str, scope: Mapping[str, str], data: Mapping[str, Any], at: datetime
) -> dict[str, Any]:
    """An event envelope without its id, attributed to the current call context."""
    context = current_call_context()
    return {
        "type": event_type,
        "timestamp": format_timestamp(at),
        "conversation_id": context.conversation_id,
        "run_id": context.run_id,
        "scope": dict(scope),
        "data": dict(data),
    }


def write_data(
    operation: str,
    ids: Sequence[str],
    written: Sequence[MemoryRecord | MemoryWriteInput],
    *,
    superseded_ids: Sequence[str] = (),
    include_content: bool,
) -> dict[str, Any]:
    """The data of a successful write or supersede: the new records' ``ids`` and what
    was ``written`` (the records, or the inputs they were made from), in one order."""
    return {
        "operation": operation,
        "record_ids": list(ids),
        "kinds": [item.kind for item in written],
        "count": len(written),
        "superseded_ids": list(superseded_ids),
        "contents": [item.content for item in written] if include_content else None,
    }


def invalidate_data(
    id: str, before: MemoryRecord | None, reason: str | None, *, include_content: bool
) -> dict[str, Any]:
    """The data of an invalidate of ``id`` (``before``: the record, or None when absent),
    without its outcome: the caller adds ``count`` (1 when it changed the record) or
    the failure."""
    return {
        "operation": "invalidate",
        "record_ids": [id],
        "kinds": [before.kind] if before else [],
        "reason_chars": None if reason is None else len(reason),
        "reason": reason if include_content else None,
    }


def delete_data(id: str, before: MemoryRecord | None) -> dict[str, Any]:
    """The data of a delete of ``id`` (``before``: the record, or None when absent),
    without its outcome: the caller adds ``count`` or the failure."""
    return {"operation": "delete", "record_ids": [id], "kinds": [before.kind] if before else []}


def write_scope(written: Sequence[MemoryRecord | MemoryWriteInput]) -> dict[str, str]:
    """The scope of a write event: the pairs every written record (or input) shares."""
    return common_scope(item.scope for item in written)


def search_data(
    query: MemorySearchQuery,
    hits: Sequence[MemoryHit],
    elapsed_seconds: float,
    *,
    mode: str,
    include_query_text: bool,
) -> dict[str, Any]:
    """The data of a successful search (``mode`` is the store's search mode), with the
    current call context's purpose."""
    return {
        "mode": "listing" if query.is_listing else mode,
        "query_chars": len(query.query or ""),
        "query": query.query if include_query_text else None,
        "kinds": None if query.kinds is None else list(query.kinds),
        "tags": None if query.tags is None else list(query.tags),
        "limit": query.limit,
        "include_invalidated": query.include_invalidated,
        "include_expired": query.include_expired,
        "result_count": len(hits),
        "result_ids": [hit.record.id for hit in hits],
        "duration_ms": round(elapsed_seconds * 1000, 3),
        "purpose": current_call_context().purpose,
    }


def recall_data(recall: Recall, *, include_query_text: bool) -> dict[str, Any]:
    """The data of one assembled recall."""
    return {
        "profile_count": recall.profile_count,
        "hit_count": recall.hit_count,
        "record_ids": [record.id for record in recall.entries],
        "chars": recall.used_chars,
        "bytes": recall.used_bytes,
        "budget_chars": recall.budget_chars,
        "truncated": recall.truncated,
        "omitted": recall.omitted,
        "query_chars": len(recall.user_text),
        "query": recall.user_text if include_query_text else None,
    }
