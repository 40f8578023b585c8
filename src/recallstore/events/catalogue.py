"""The catalogue of memory event types: the one place an event type is declared.

Each :class:`EventType` entry names the type, its envelope model, the OpenTelemetry
attributes read from it (typed getters) and the store calls whose spans carry it.
Everything else derives from :data:`EVENT_CATALOGUE`: :data:`EVENT_TYPES`,
:data:`EVENT_MODELS`, the discriminated union behind :func:`parse_event`, the
attributes ``recallstore.events.otel`` sets (:func:`event_attributes`), the span
operations (:data:`OPERATION_NAMES`), and ``event_manifest.json`` with
``docs/events.md`` (``recallstore.events.manifest``). The dashboard's live feed reads
the type list from the manifest and has one renderer per type.

Span names and attributes follow the merged GenAI memory semantic conventions
(semantic-conventions-genai; their names and the store-call mapping are in
``recallstore.events._genai_memory``). The attributes listed here are read from the
event, so they never hold more than the event does; what the conventions read from
the call itself (store id, attempted count, opt-in content) ``recallstore.events.otel``
sets. Everything the conventions do not define is under ``recallstore.``.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Final, cast, get_args

from pydantic import Field, TypeAdapter

from recallstore.events._event_type import (
    COMMON_ATTRIBUTES,
    ERROR_TYPE,
    GEN_AI_MEMORY_RECORD_COUNT,
    GEN_AI_MEMORY_RECORD_ID,
    GEN_AI_OPERATION_NAME,
    OPERATION_NAMES,
    RECALLSTORE_OPERATION,
    RECALLSTORE_RECORD_CHANGED,
    RECALLSTORE_SCOPE_PREFIX,
    SCOPE_ATTRIBUTE_SOURCE,
    SPAN_NAME,
    AttributeValue,
    EventType,
    LensView,
    OtelAttribute,
    StoreCall,
    StoreOperation,
)
from recallstore.events.learning import LEARN_EVENT, LEARNED_EVENT
from recallstore.events.models import (
    GAP_EVENT_TYPE,
    RECALL_EVENT_TYPE,
    SEARCH_EVENT_TYPE,
    WRITE_EVENT_TYPE,
    MemoryEvent,
    MemoryRecallEvent,
    MemorySearchEvent,
    MemoryWriteEvent,
    WriteOperation,
)

__all__ = [
    "BUILT_IN_EVENT_TYPES",
    "COMMON_ATTRIBUTES",
    "ERROR_TYPE",
    "EVENT_CATALOGUE",
    "EVENT_LENS",
    "EVENT_MODELS",
    "EVENT_TYPES",
    "GEN_AI_MEMORY_RECORD_ID",
    "GEN_AI_OPERATION_NAME",
    "MEMORY_EVENT_TYPES",
    "OPERATION_NAMES",
    "RECALLSTORE_OPERATION",
    "RECALLSTORE_SCOPE_PREFIX",
    "SCOPE_ATTRIBUTE_SOURCE",
    "SPAN_NAME",
    "AttributeValue",
    "EventType",
    "LensView",
    "OtelAttribute",
    "StoreCall",
    "StoreOperation",
    "catalogue_entry",
    "declared_emitters",
    "event_attributes",
    "event_parser",
    "parse_event",
]


def _only(ids: Sequence[str]) -> str | None:
    return ids[0] if len(ids) == 1 else None


_Write = OtelAttribute[MemoryWriteEvent]
_Search = OtelAttribute[MemorySearchEvent]
_Recall = OtelAttribute[MemoryRecallEvent]

BUILT_IN_EVENT_TYPES: Final[tuple[EventType[Any], ...]] = (
    EventType(
        name=WRITE_EVENT_TYPE,
        model=MemoryWriteEvent,
        operations=(
            *cast(tuple[StoreOperation, ...], get_args(WriteOperation)),
            "upsert",
            "forget",
        ),
        attributes=(
            _Write(
                GEN_AI_MEMORY_RECORD_ID,
                "data.record_ids[0] (when exactly one)",
                lambda e: _only(e.data.record_ids),
            ),
            _Write(RECALLSTORE_RECORD_CHANGED, "data.count", lambda e: e.data.count),
            _Write("recallstore.ok", "data.ok", lambda e: e.data.ok),
            _Write("recallstore.record.ids", "data.record_ids", lambda e: e.data.record_ids),
            _Write("recallstore.record.kinds", "data.kinds", lambda e: e.data.kinds),
            _Write(
                "recallstore.superseded_ids",
                "data.superseded_ids",
                lambda e: e.data.superseded_ids,
            ),
            _Write("recallstore.reason_chars", "data.reason_chars", lambda e: e.data.reason_chars),
        ),
    ),
    EventType(
        name=SEARCH_EVENT_TYPE,
        model=MemorySearchEvent,
        operations=("search",),
        attributes=(
            _Search(GEN_AI_MEMORY_RECORD_COUNT, "data.result_count", lambda e: e.data.result_count),
            _Search("recallstore.ok", "data.ok", lambda e: e.data.ok),
            _Search("recallstore.search.mode", "data.mode", lambda e: e.data.mode),
            _Search(
                "recallstore.search.query_chars", "data.query_chars", lambda e: e.data.query_chars
            ),
            _Search("recallstore.search.kinds", "data.kinds", lambda e: e.data.kinds),
            _Search("recallstore.search.tags", "data.tags", lambda e: e.data.tags),
            _Search("recallstore.search.limit", "data.limit", lambda e: e.data.limit),
            _Search(
                "recallstore.search.include_invalidated",
                "data.include_invalidated",
                lambda e: e.data.include_invalidated,
            ),
            _Search(
                "recallstore.search.include_expired",
                "data.include_expired",
                lambda e: e.data.include_expired,
            ),
            _Search("recallstore.record.ids", "data.result_ids", lambda e: e.data.result_ids),
            _Search(
                "recallstore.search.duration_ms", "data.duration_ms", lambda e: e.data.duration_ms
            ),
        ),
    ),
    EventType(
        name=RECALL_EVENT_TYPE,
        model=MemoryRecallEvent,
        log_context="the span active when assemble_recall finished",
        attributes=(
            _Recall(
                GEN_AI_MEMORY_RECORD_COUNT,
                "data.record_ids (length)",
                lambda e: len(e.data.record_ids),
            ),
            _Recall(
                "recallstore.recall.profile_count",
                "data.profile_count",
                lambda e: e.data.profile_count,
            ),
            _Recall("recallstore.recall.hit_count", "data.hit_count", lambda e: e.data.hit_count),
            _Recall("recallstore.record.ids", "data.record_ids", lambda e: e.data.record_ids),
            _Recall("recallstore.recall.chars", "data.chars", lambda e: e.data.chars),
            _Recall("recallstore.recall.bytes", "data.bytes", lambda e: e.data.bytes),
            _Recall(
                "recallstore.recall.budget_chars",
                "data.budget_chars",
                lambda e: e.data.budget_chars,
            ),
            _Recall("recallstore.recall.truncated", "data.truncated", lambda e: e.data.truncated),
            _Recall("recallstore.recall.omitted", "data.omitted", lambda e: e.data.omitted),
            _Recall(
                "recallstore.recall.query_chars", "data.query_chars", lambda e: e.data.query_chars
            ),
        ),
    ),
    LEARN_EVENT,
    LEARNED_EVENT,
)
"""The event types the observed store and the journal emit themselves (the last two,
memory that learns, declared in ``recallstore.events.learning``)."""

EVENT_CATALOGUE: Final[tuple[EventType[Any], ...]] = (*BUILT_IN_EVENT_TYPES,)
"""Every memory event type, in publication order: an event type of its own module joins
here (docs/contributing.md, "Adding an event type")."""

EVENT_MODELS: Final[Mapping[str, type[MemoryEvent]]] = {
    entry.name: entry.model for entry in EVENT_CATALOGUE
}
"""Each memory event type and its envelope model."""
MEMORY_EVENT_TYPES: Final[tuple[str, ...]] = tuple(EVENT_MODELS)
"""The memory event types, as published on the bus."""
EVENT_TYPES: Final[tuple[str, ...]] = (*MEMORY_EVENT_TYPES, GAP_EVENT_TYPE)
"""Every ``event:`` name the SSE stream can send (the memory events, then ``gap``)."""

_ENTRIES: Final[Mapping[str, EventType[Any]]] = {entry.name: entry for entry in EVENT_CATALOGUE}

EVENT_LENS: Final[Mapping[str, LensView]] = {
    entry.name: entry.lens for entry in EVENT_CATALOGUE if entry.lens is not None
}
"""The lens's view of each event type that declares one (for types ``lens.js`` does not
render itself)."""


_EMITTERS: Final[Mapping[str, tuple[EventType[Any], ...]]] = {
    operation: tuple(e for e in EVENT_CATALOGUE if e.emit is not None and operation in e.operations)
    for operation in OPERATION_NAMES
}
"""Per store call, computed once: the observed store asks on every call."""


def declared_emitters(operation: StoreOperation) -> tuple[EventType[Any], ...]:
    """The event types a finished ``operation`` call emits through :attr:`EventType.emit`."""
    return _EMITTERS.get(operation, ())


def catalogue_entry(event_type: str) -> EventType[Any]:
    """The catalogue entry of ``event_type``; ``KeyError`` names an unknown type."""
    try:
        return _ENTRIES[event_type]
    except KeyError:
        raise KeyError(
            f"unknown event type {event_type!r}; known: {', '.join(MEMORY_EVENT_TYPES)}"
        ) from None


def event_parser(catalogue: Iterable[EventType[Any]] = EVENT_CATALOGUE) -> TypeAdapter[MemoryEvent]:
    """A validator for any event of ``catalogue``: a union discriminated by ``type``."""
    models = tuple(entry.model for entry in catalogue)
    if not models:
        raise ValueError("an event parser needs at least one event type")
    union: Any = typing.Union[models] if len(models) > 1 else models[0]  # noqa: UP007
    return TypeAdapter(cast(Any, Annotated[union, Field(discriminator="type")]))


_ANY_EVENT: Final = event_parser()


def parse_event(value: str | bytes | Mapping[str, Any]) -> MemoryEvent:
    """Parse an event of any catalogued type from its JSON text (an SSE ``data:`` line)
    or a dict; a ``pydantic.ValidationError`` names an unknown type or a bad field."""
    if isinstance(value, (str, bytes)):
        return _ANY_EVENT.validate_json(value)
    return _ANY_EVENT.validate_python(value)


def _attribute_value(value: AttributeValue | None) -> AttributeValue | None:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return [str(item) for item in value]


def event_attributes(
    event: MemoryEvent, *, include_scope: bool = True
) -> dict[str, AttributeValue]:
    """The OpenTelemetry attributes of ``event`` for its span and log record: the common
    ones, its catalogue entry's, and (with ``include_scope``) one per scope pair."""
    attributes: dict[str, AttributeValue] = {}
    entry = catalogue_entry(event.type)
    for attribute in (*COMMON_ATTRIBUTES, *entry.attributes):
        value = _attribute_value(attribute.read(event))
        if value is not None:
            attributes[attribute.name] = value
    if include_scope:
        for key, value in event.scope.items():
            attributes[RECALLSTORE_SCOPE_PREFIX + key] = value
    return attributes
