"""What an event type is made of: :class:`EventType`, its OpenTelemetry attributes, the
store calls it belongs to, and how a store call or the lens turns into one.

``recallstore.events.catalogue`` lists the event types; an event type of its own module
(``recallstore.events.read`` is the walk-through's) imports these to declare itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar, cast

from recallstore.events._genai_memory import (
    ERROR_TYPE,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_MEMORY_QUERY_TEXT,
    GEN_AI_MEMORY_RECORD_COUNT,
    GEN_AI_MEMORY_RECORD_ID,
    GEN_AI_OPERATION_NAME,
    OPERATION_NAMES,
    SPAN_NAME,
    StoreOperation,
)
from recallstore.events.models import EventData, MemoryEvent

__all__ = [
    "COMMON_ATTRIBUTES",
    "ERROR_TYPE",
    "GEN_AI_CONVERSATION_ID",
    "GEN_AI_MEMORY_QUERY_TEXT",
    "GEN_AI_MEMORY_RECORD_COUNT",
    "GEN_AI_MEMORY_RECORD_ID",
    "GEN_AI_OPERATION_NAME",
    "OPERATION_NAMES",
    "RECALLSTORE_OPERATION",
    "RECALLSTORE_RECORD_CHANGED",
    "RECALLSTORE_SCOPE_PREFIX",
    "SCOPE_ATTRIBUTE_SOURCE",
    "SPAN_NAME",
    "AttributeValue",
    "EventType",
    "LensView",
    "OtelAttribute",
    "StoreCall",
    "StoreOperation",
]

_E = TypeVar("_E", bound=MemoryEvent)

AttributeValue = str | bool | int | float | Sequence[str]
"""What an OpenTelemetry attribute can hold (a sequence is exported as strings)."""

RECALLSTORE_RECORD_CHANGED: Final = "recallstore.record.changed"
"""How many records a write call changed (an invalidate of an invalid record changes
none); ``gen_ai.memory.record.count`` is what it attempted."""
RECALLSTORE_OPERATION: Final = "recallstore.operation"
RECALLSTORE_SCOPE_PREFIX: Final = "recallstore.scope."
SCOPE_ATTRIBUTE_SOURCE: Final = (RECALLSTORE_SCOPE_PREFIX + "<key>", "scope.<key>")
"""The scope pairs' attribute, as the manifest documents it (one per scope key)."""


@dataclass(frozen=True)
class OtelAttribute(Generic[_E]):
    """One OpenTelemetry attribute of an event: its name, the event field it is read
    from (as the manifest documents it) and the typed getter that reads it. A getter
    returning None leaves the attribute out."""

    name: str
    source: str
    read: Callable[[_E], AttributeValue | None]


_Common = OtelAttribute[MemoryEvent]
COMMON_ATTRIBUTES: Final[tuple[OtelAttribute[MemoryEvent], ...]] = (
    _Common("recallstore.event.id", "id", lambda e: e.id),
    _Common(GEN_AI_CONVERSATION_ID, "conversation_id", lambda e: e.conversation_id),
    _Common("recallstore.run_id", "run_id", lambda e: e.run_id),
)
"""Attributes every event contributes to its span and log record, besides the scope
pairs (``recallstore.scope.<key>``, see :func:`event_attributes`)."""


@dataclass(frozen=True)
class StoreCall:
    """One finished store call, as :attr:`EventType.emit` sees it."""

    operation: StoreOperation
    """The call (``get``, ``search``, ``write``, …)."""
    arguments: Mapping[str, Any]
    """Its arguments by name (``{"id": ...}`` for ``get``)."""
    result: Any
    """What it returned."""


@dataclass(frozen=True)
class LensView:
    """How the memory lens shows an event type that has no renderer in ``lens.js``.

    ``summary`` is the row's text, with ``{field}`` replaced by that field of the
    event's ``data``; ``details`` are the data fields listed under it. Values are shown
    as text, never as HTML.
    """

    summary: str
    details: tuple[str, ...] = ()


@dataclass(frozen=True)
class EventType(Generic[_E]):
    """One memory event type: everything the package derives an event type from.

    ``operations`` are the store calls whose span the event is recorded in (empty: the
    event is emitted as a log record in whatever span is active, ``log_context``).
    """

    name: str
    """The event type: the envelope's ``type``, the SSE ``event:`` and the OTel event name."""
    model: type[_E]
    """The envelope model; its ``type`` is ``Literal[name]`` and its ``data`` the payload."""
    attributes: tuple[OtelAttribute[_E], ...]
    """The OpenTelemetry attributes read from the event, after :data:`COMMON_ATTRIBUTES`."""
    operations: tuple[StoreOperation, ...] = ()
    """The store calls that emit this event inside their span."""
    log_context: str = "the span of the store call"
    """Where the event's log record is emitted, as the manifest says it."""
    emit: Callable[[StoreCall], tuple[Mapping[str, str], Mapping[str, Any]] | None] | None = None
    """How a store call of ``operations`` becomes this event: the event's scope and
    data from the finished call, or None for no event. Types the observed store emits
    itself (the write, search and recall events) leave it out."""
    lens: LensView | None = None
    """How the memory lens shows the event when ``lens.js`` has no renderer for it."""

    def __post_init__(self) -> None:
        type_field = self.model.model_fields.get("type")
        if type_field is None or type_field.default != self.name:
            raise ValueError(
                f"event type {self.name!r}: {self.model.__name__}.type must default to "
                f"{self.name!r}, not {getattr(type_field, 'default', None)!r}"
            )
        data = self.model.model_fields["data"].annotation
        if not (isinstance(data, type) and issubclass(data, EventData)):
            raise ValueError(
                f"event type {self.name!r}: {self.model.__name__}.data must be an "
                f"EventData model, not {data!r}"
            )
        unknown = [op for op in self.operations if op not in OPERATION_NAMES]
        if unknown:
            raise ValueError(f"event type {self.name!r}: unknown store operations {unknown!r}")

    @property
    def data_model(self) -> type[EventData]:
        """The model of the event's ``data`` payload."""
        return cast(type[EventData], self.model.model_fields["data"].annotation)
