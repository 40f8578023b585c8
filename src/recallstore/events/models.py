"""The memory events' data models: one envelope, one model per event type, and the
SSE-only gap notice.

Events describe what happened to memory, never what it says: record ids, kinds,
counts and sizes. Memory content, invalidation reasons and query text appear only when
the host opts in (``ObservedMemoryStore(include_content=..., include_query_text=...)``).
Each event type is listed once, with its model, in ``recallstore.events.catalogue``;
the union, the OpenTelemetry mapping and ``event_manifest.json`` derive from there.
Change a field here and the manifest drift test fails until
``python -m recallstore.events.manifest --write`` runs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from recallstore.backends.journal import RECALL_TYPE, SEARCH_TYPE, WRITE_TYPE
from recallstore.records import MemoryKind, format_timestamp
from recallstore.values import utc_now

__all__ = [
    "GAP_EVENT_TYPE",
    "OPT_IN_KEY",
    "RECALL_EVENT_TYPE",
    "SEARCH_EVENT_TYPE",
    "WRITE_EVENT_TYPE",
    "EventData",
    "MemoryEvent",
    "MemoryRecallData",
    "MemoryRecallEvent",
    "MemorySearchData",
    "MemorySearchEvent",
    "MemoryWriteData",
    "MemoryWriteEvent",
    "StreamGap",
    "WriteOperation",
]

# The journal (a store extension, a layer below) writes the same types: defined there.
WRITE_EVENT_TYPE: Final = WRITE_TYPE
SEARCH_EVENT_TYPE: Final = SEARCH_TYPE
RECALL_EVENT_TYPE: Final = RECALL_TYPE
GAP_EVENT_TYPE: Final = "gap"

WriteOperation = Literal["write", "supersede", "invalidate", "delete"]
"""The store call an ``agent.memory.write`` event describes; also the name of that
call's OpenTelemetry span operation (``recallstore.operation``)."""

_RecordIds = tuple[str, ...]
OPT_IN_KEY: Final = "x-opt-in"
"""JSON-schema key naming the ``ObservedMemoryStore`` flag a field needs to be present."""
_OPT_IN_CONTENT: Final[dict[str, Any]] = {OPT_IN_KEY: "include_content"}
_OPT_IN_QUERY: Final[dict[str, Any]] = {OPT_IN_KEY: "include_query_text"}


class _Frozen(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
        # Every field is always present in an event's JSON, defaults included.
        json_schema_serialization_defaults_required=True,
    )


class EventData(_Frozen):
    """Base of the event data models."""


class MemoryWriteData(EventData):
    """One mutation of the store: a write, a supersede (a write whose batch supersedes
    records), an invalidation or a delete. Emitted for failed calls too, with ``ok``
    false; a failed call changed nothing."""

    operation: WriteOperation
    """Which store call this was: ``write``, or ``supersede`` when any record of the
    batch supersedes another (``superseded_ids``), ``invalidate`` or ``delete``."""
    ok: bool = True
    """False when the store call raised; nothing was changed."""
    error: str | None = None
    """The exception type name when ``ok`` is false (e.g. ``MemoryConflictError``)."""
    record_ids: _RecordIds = ()
    """Write and supersede: the ids of the records created (empty when it failed).
    Invalidate and delete: the id the call named; a journaled ``forget(scope)``: every
    id it deleted (``ObservedMemoryStore.forget``'s own event: none, only ``count``)."""
    kinds: tuple[MemoryKind, ...] = ()
    """The kind of each record in ``record_ids``, in the same order (empty when the
    named record did not exist)."""
    count: int = Field(default=0, ge=0)
    """Records changed: created by a write or supersede, invalidated, or deleted. 0 when
    the call failed, the record was absent, or it was already invalid."""
    superseded_ids: _RecordIds = ()
    """Supersede: the ids the batch supersedes (invalidated in the same transaction)."""
    reason_chars: int | None = Field(default=None, ge=0)
    """Invalidate: the length of the reason given, or null when none was given."""
    reason: str | None = Field(default=None, json_schema_extra=_OPT_IN_CONTENT)
    """Invalidate: the reason text. Only with ``include_content``; it is model text."""
    contents: tuple[str, ...] | None = Field(default=None, json_schema_extra=_OPT_IN_CONTENT)
    """Write and supersede: the content of each record in ``record_ids``. Only with
    ``include_content``."""


class MemorySearchData(EventData):
    """One search or listing of the store (a recall's searches included)."""

    mode: Literal["listing", "keyword", "semantic", "hybrid"]
    """``listing`` for blank query text (recency order), else the store's search mode."""
    ok: bool = True
    """False when the store call raised."""
    error: str | None = None
    """The exception type name when ``ok`` is false."""
    query_chars: int = Field(ge=0)
    """Length of the query text in characters (0 for a listing)."""
    query: str | None = Field(default=None, json_schema_extra=_OPT_IN_QUERY)
    """The query text. Only with ``include_query_text``; it is user or model text."""
    kinds: tuple[MemoryKind, ...] | None = None
    """The kind filter, or null for none."""
    tags: tuple[str, ...] | None = None
    """The tag filter, or null for none."""
    limit: int = Field(ge=0)
    """The requested maximum number of hits."""
    include_invalidated: bool = False
    """Whether invalidated records were allowed."""
    include_expired: bool = False
    """Whether expired records were allowed."""
    result_count: int = Field(default=0, ge=0)
    """Number of hits returned."""
    result_ids: _RecordIds = ()
    """The ids of the hits, best first."""
    duration_ms: float = Field(default=0.0, ge=0)
    """Time the store took, in milliseconds."""
    purpose: str | None = None
    """Why the search was made when nobody asked for it by name: ``duplicate_check``
    for the search a memory tool's save makes first, for an equal valid memory; null
    for a search asked for (a tool's, a recall's, a caller's)."""


class MemoryRecallData(EventData):
    """One turn-1 recall assembled for a conversation (after its searches)."""

    profile_count: int = Field(ge=0)
    """Profile-kind entries recalled (always first)."""
    hit_count: int = Field(ge=0)
    """Search-hit entries recalled after the profile."""
    record_ids: _RecordIds = ()
    """The ids of the recalled entries, in prompt order."""
    chars: int = Field(ge=0)
    """Characters of the rendered recall block (what the budget bounds); 0 when the
    recall gave no block."""
    bytes: int = Field(ge=0)
    """UTF-8 size of the rendered recall block."""
    budget_chars: int = Field(ge=0)
    """The character budget the recall was assembled under."""
    truncated: bool
    """True when entries were left out to fit the budget; never silent."""
    omitted: int = Field(ge=0)
    """Entries fetched but left out because they did not fit."""
    query_chars: int = Field(ge=0)
    """Length of the user text the recall searched for."""
    query: str | None = Field(default=None, json_schema_extra=_OPT_IN_QUERY)
    """The user text. Only with ``include_query_text``."""


class MemoryEvent(_Frozen):
    """The envelope every memory event shares. ``id`` is assigned by the bus."""

    type: str
    """The event type; also the SSE ``event:`` name and the OpenTelemetry event name."""
    id: int = Field(default=0, ge=0)
    """Position in the bus's sequence: strictly increasing per bus, starting at 1
    (0 until published). On a bus fed from a store's journal it is the journal's
    sequence: the same in every process and across restarts, with possible holes
    (pruned rows, rolled-back Postgres appends). Also the SSE ``id:``."""
    timestamp: datetime = Field(default_factory=utc_now)
    """When the operation finished, UTC, ISO 8601 with microseconds."""
    conversation_id: str | None = None
    """The conversation the store call was made for (from ``call_context``), if any."""
    run_id: str | None = None
    """The agent run the store call was made for, if any."""
    scope: dict[str, str] = Field(default_factory=dict)
    """The scope the operation touched. Write: the pairs every written record shares
    (a mixed batch gives the common subset). Invalidate and delete: the record's scope
    ({} when absent). Search: the filter scope. Recall: the recall's scope."""
    data: EventData
    """The type-specific payload."""

    @field_serializer("timestamp", when_used="json")
    def _dump_timestamp(self, value: datetime) -> str:
        return format_timestamp(value)


class MemoryWriteEvent(MemoryEvent):
    """``agent.memory.write``: every mutation of the store."""

    type: Literal["agent.memory.write"] = WRITE_EVENT_TYPE
    """The event type; also the SSE ``event:`` name and the OpenTelemetry event name."""
    data: MemoryWriteData
    """The type-specific payload."""


class MemorySearchEvent(MemoryEvent):
    """``agent.memory.search``: every search or listing of the store."""

    type: Literal["agent.memory.search"] = SEARCH_EVENT_TYPE
    """The event type; also the SSE ``event:`` name and the OpenTelemetry event name."""
    data: MemorySearchData
    """The type-specific payload."""


class MemoryRecallEvent(MemoryEvent):
    """``agent.memory.recall``: every turn-1 recall assembled over an observed store."""

    type: Literal["agent.memory.recall"] = RECALL_EVENT_TYPE
    """The event type; also the SSE ``event:`` name and the OpenTelemetry event name."""
    data: MemoryRecallData
    """The type-specific payload."""


class StreamGap(_Frozen):
    """SSE only: events this stream will never deliver. Sent before the events that
    follow the gap; it carries no ``id:`` so a client's Last-Event-ID is unchanged."""

    type: Literal["gap"] = GAP_EVENT_TYPE
    """Always ``gap``."""
    reason: Literal["expired", "overflow", "reset"]
    """``expired``: Last-Event-ID is older than what is retained (the replay buffer;
    with a journal, the journal's retention). ``overflow``: this client read too slowly
    and its queue dropped events. ``reset``: Last-Event-ID is newer than anything this
    bus published (a server without a journal restarted; with one, the database was
    replaced)."""
    after_id: int | None = None
    """The last event id the client had (Last-Event-ID, or the last one delivered)."""
    first_available_id: int | None = None
    """The id the stream resumes from, when known."""
    missed: int = Field(ge=0)
    """How many events were lost: exact for ``overflow``; for ``expired`` and ``reset``
    an upper bound (a scope-filtered stream may have missed fewer)."""
