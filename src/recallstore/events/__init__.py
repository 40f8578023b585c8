"""Memory events: the catalogue of event types, their models, the bus, the observed
store and the manifest.

The core imports neither Starlette nor OpenTelemetry: the SSE app lives in
``recallstore.events.sse`` (extra ``server``) and the OpenTelemetry instrumentation in
``recallstore.events.otel`` (extra ``otel``).
"""

from typing import TYPE_CHECKING, Any

from recallstore.events.bus import BusStats, EventBus, EventListener, Subscription
from recallstore.events.catalogue import (
    EVENT_CATALOGUE,
    EVENT_TYPES,
    MEMORY_EVENT_TYPES,
    EventType,
    OtelAttribute,
    parse_event,
)
from recallstore.events.models import (
    GAP_EVENT_TYPE,
    MemoryEvent,
    MemoryRecallData,
    MemoryRecallEvent,
    MemorySearchData,
    MemorySearchEvent,
    MemoryWriteData,
    MemoryWriteEvent,
    StreamGap,
)
from recallstore.events.observed import ObservedMemoryStore, OperationTrace, StoreTelemetry

if TYPE_CHECKING:
    from recallstore.events.manifest import build_manifest

__all__ = [
    "EVENT_CATALOGUE",
    "EVENT_TYPES",
    "GAP_EVENT_TYPE",
    "MEMORY_EVENT_TYPES",
    "BusStats",
    "EventBus",
    "EventListener",
    "EventType",
    "MemoryEvent",
    "MemoryRecallData",
    "MemoryRecallEvent",
    "MemorySearchData",
    "MemorySearchEvent",
    "MemoryWriteData",
    "MemoryWriteEvent",
    "ObservedMemoryStore",
    "OperationTrace",
    "OtelAttribute",
    "StoreTelemetry",
    "StreamGap",
    "Subscription",
    "build_manifest",
    "parse_event",
]


def __getattr__(name: str) -> Any:
    # Imported on first use so `python -m recallstore.events.manifest` runs it only once.
    if name == "build_manifest":
        from recallstore.events.manifest import build_manifest

        return build_manifest
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
