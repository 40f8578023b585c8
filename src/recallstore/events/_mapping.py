"""How memory events map onto OpenTelemetry: span names, attributes, log records.

Plain data and pure functions (no OpenTelemetry import), shared by ``otel.py`` (which
applies the mapping) and ``manifest.py`` (which publishes it), so the two cannot drift.
Span attributes follow the GenAI memory conventions where they exist
(``gen_ai.operation.name``, ``gen_ai.memory.*``, ``gen_ai.conversation.id``,
``error.type``); everything else is under ``recallstore.``. Attributes are read from
the event only, so telemetry never holds more than the event does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from recallstore.events.models import (
    RECALL_EVENT_TYPE,
    SEARCH_EVENT_TYPE,
    WRITE_EVENT_TYPE,
    MemoryEvent,
)

__all__ = [
    "COMMON_ATTRIBUTES",
    "ERROR_TYPE",
    "EVENT_ATTRIBUTES",
    "OPERATION_NAMES",
    "SPAN_NAME",
    "AttributeValue",
    "StoreOperation",
    "common_attribute_paths",
    "event_attributes",
]

StoreOperation = Literal["write", "supersede", "invalidate", "delete", "search", "get"]
"""The store calls ``ObservedMemoryStore`` traces (a write with ``supersedes`` is
``supersede``)."""

AttributeValue = str | bool | int | float | Sequence[str]

GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_MEMORY_RECORD_ID: Final = "gen_ai.memory.record.id"
GEN_AI_MEMORY_RECORD_COUNT: Final = "gen_ai.memory.record.count"
GEN_AI_MEMORY_QUERY_TEXT: Final = "gen_ai.memory.query.text"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
ERROR_TYPE: Final = "error.type"
RECALLSTORE_OPERATION: Final = "recallstore.operation"
RECALLSTORE_BACKEND: Final = "recallstore.store.backend"
RECALLSTORE_SCOPE_PREFIX: Final = "recallstore.scope."

OPERATION_NAMES: Final[Mapping[StoreOperation, str]] = {
    "write": "create_memory",
    "supersede": "update_memory",
    "invalidate": "update_memory",
    "delete": "delete_memory",
    "search": "search_memory",
    "get": "search_memory",
}
"""``gen_ai.operation.name`` for each store call; the span is named the same."""

SPAN_NAME: Final = "{gen_ai.operation.name}"

COMMON_ATTRIBUTES: Final[Mapping[str, str]] = {
    "recallstore.event.id": "id",
    GEN_AI_CONVERSATION_ID: "conversation_id",
    "recallstore.run_id": "run_id",
    RECALLSTORE_SCOPE_PREFIX + "<key>": "scope.<key>",
}
"""Attributes every event contributes to its span and log record (name -> event field).
Absent (null) fields are left out."""

EVENT_ATTRIBUTES: Final[Mapping[str, Mapping[str, str]]] = {
    WRITE_EVENT_TYPE: {
        RECALLSTORE_OPERATION: "data.operation",
        GEN_AI_MEMORY_RECORD_ID: "data.record_ids[0] (when exactly one)",
        GEN_AI_MEMORY_RECORD_COUNT: "data.count",
        "recallstore.ok": "data.ok",
        "recallstore.record.ids": "data.record_ids",
        "recallstore.record.kinds": "data.kinds",
        "recallstore.superseded_ids": "data.superseded_ids",
        "recallstore.reason_chars": "data.reason_chars",
    },
    SEARCH_EVENT_TYPE: {
        GEN_AI_MEMORY_RECORD_COUNT: "data.result_count",
        GEN_AI_MEMORY_QUERY_TEXT: "data.query (only with include_query_text)",
        "recallstore.ok": "data.ok",
        "recallstore.search.mode": "data.mode",
        "recallstore.search.query_chars": "data.query_chars",
        "recallstore.search.kinds": "data.kinds",
        "recallstore.search.tags": "data.tags",
        "recallstore.search.limit": "data.limit",
        "recallstore.search.include_invalidated": "data.include_invalidated",
        "recallstore.search.include_expired": "data.include_expired",
        "recallstore.record.ids": "data.result_ids",
        "recallstore.search.duration_ms": "data.duration_ms",
    },
    RECALL_EVENT_TYPE: {
        GEN_AI_MEMORY_RECORD_COUNT: "data.record_ids (length)",
        "recallstore.recall.profile_count": "data.profile_count",
        "recallstore.recall.hit_count": "data.hit_count",
        "recallstore.record.ids": "data.record_ids",
        "recallstore.recall.chars": "data.chars",
        "recallstore.recall.bytes": "data.bytes",
        "recallstore.recall.budget_chars": "data.budget_chars",
        "recallstore.recall.truncated": "data.truncated",
        "recallstore.recall.omitted": "data.omitted",
        "recallstore.recall.query_chars": "data.query_chars",
    },
}
"""Per event type: attribute name -> the event field it is read from. Set on the store
call's span (write, search) and on every log record."""


def _field(event: MemoryEvent, path: str) -> Any:
    spec = path.split(" ", 1)[0]
    value: Any = event
    for part in spec.split("."):
        name, _, index = part.partition("[")
        value = getattr(value, name, None)
        if value is None:
            return None
        if index:
            sequence = tuple(value)
            if len(sequence) != 1:
                return None
            value = sequence[0]
    if "(length)" in path:
        return len(value)
    return value


def _attribute_value(value: Any) -> AttributeValue | None:
    if value is None:
        return None
    if isinstance(value, (str, bool, int, float)):
        return value
    return [str(item) for item in value]


def event_attributes(
    event: MemoryEvent, *, include_scope: bool = True
) -> dict[str, AttributeValue]:
    """The attributes of ``event`` for its span and log record (see :data:`EVENT_ATTRIBUTES`)."""
    attributes: dict[str, AttributeValue] = {}
    for name, path in (*common_attribute_paths(), *EVENT_ATTRIBUTES[event.type].items()):
        value = _attribute_value(_field(event, path))
        if value is not None:
            attributes[name] = value
    if include_scope:
        for key, value in event.scope.items():
            attributes[RECALLSTORE_SCOPE_PREFIX + key] = value
    return attributes


def common_attribute_paths() -> tuple[tuple[str, str], ...]:
    """The non-scope entries of :data:`COMMON_ATTRIBUTES`."""
    return tuple((name, path) for name, path in COMMON_ATTRIBUTES.items() if "<key>" not in name)
