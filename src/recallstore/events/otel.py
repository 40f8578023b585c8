"""OpenTelemetry for memory: a span per store call, events as log records (extra ``otel``).

Pass an :class:`OtelInstrumentation` to ``ObservedMemoryStore(..., telemetry=...)``:

* every store call runs inside a span named by the merged GenAI memory conventions
  (``recallstore.events._genai_memory``: ``create_memory``, ``upsert_memory``,
  ``update_memory``, ``delete_memory``, ``search_memory``) with
  ``gen_ai.operation.name``, ``gen_ai.memory.store.id``, ``gen_ai.memory.record.id``
  for single-record calls, ``gen_ai.memory.record.count``, ``gen_ai.conversation.id``
  and, where the conventions have nothing, ``recallstore.*``;
* each event is emitted as a log record with ``event_name`` = the event type, the
  envelope as its body, inside that span (a recall's inside whatever span is active);
* content — ``gen_ai.memory.query.text`` and ``gen_ai.memory.records`` — only when the
  user opts in: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (``true``,
  ``SPAN_ONLY`` or ``SPAN_AND_EVENT``) or ``capture_content=True``; a log record's body
  holds content only when the event does (``include_content``, ``include_query_text``);
* a failing processor or exporter never raises into the agent: the failure is logged
  once and counted in :attr:`OtelInstrumentation.failures`.

Only ``opentelemetry-api`` is used; spans and records go to whatever providers the host
configured (the global ones unless given).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from recallstore._version import __version__
from recallstore.errors import MissingDependencyError
from recallstore.events import _genai_memory as semconv
from recallstore.events import catalogue
from recallstore.events.models import MemoryEvent
from recallstore.records import MemoryHit, MemoryRecord

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, TracerProvider

__all__ = ["INSTRUMENTATION_NAME", "OtelInstrumentation"]

INSTRUMENTATION_NAME = "recallstore"
_logger = logging.getLogger("recallstore.events.otel")
_T = TypeVar("_T")


class _SpanTrace:
    """The handle ``ObservedMemoryStore`` hands the event of one store call."""

    def __init__(self, instrumentation: OtelInstrumentation, span: Span | None) -> None:
        self._instrumentation = instrumentation
        self._span = span

    def record(self, event: MemoryEvent) -> None:
        """Set the event's attributes on the span and emit it as a log record inside it."""
        instrumentation = self._instrumentation
        span = self._span
        if span is not None:
            instrumentation._guard(lambda: span.set_attributes(instrumentation._attributes(event)))
        instrumentation._emit(event, span)

    def finished(self, call: catalogue.StoreCall, *, failed: bool, store_id: str | None) -> None:
        """Set what the conventions read from the call: the store id, the count and,
        on the opt-in, the content."""
        span = self._span
        if span is not None:
            attributes = _call_attributes(
                call, failed, store_id, self._instrumentation.capture_content
            )
            self._instrumentation._guard(lambda: span.set_attributes(attributes))


def _call_attributes(
    call: catalogue.StoreCall, failed: bool, store_id: str | None, content: bool
) -> dict[str, catalogue.AttributeValue]:
    attributes: dict[str, catalogue.AttributeValue] = {}
    if store_id is not None:
        attributes[semconv.GEN_AI_MEMORY_STORE_ID] = store_id
    count = _record_count(call, failed)
    if count is not None:
        attributes[semconv.GEN_AI_MEMORY_RECORD_COUNT] = count
    if content and not failed:
        query = call.arguments.get("query")
        if call.operation == "search" and query is not None and query.query is not None:
            attributes[semconv.GEN_AI_MEMORY_QUERY_TEXT] = query.query
        records = _records_of(call)
        if records is not None:
            attributes[semconv.GEN_AI_MEMORY_RECORDS] = json.dumps(records, ensure_ascii=False)
    return attributes


def _record_count(call: catalogue.StoreCall, failed: bool) -> int | None:
    """The records a search returned, or a write or delete attempted (the conventions'
    ``gen_ai.memory.record.count``); a search's count comes from its event."""
    if call.operation in ("write", "upsert", "supersede"):
        return len(call.arguments["inputs"])
    if call.operation in ("invalidate", "delete", "corroborate", "promote", "demote"):
        return 1
    if failed:
        return None
    if call.operation == "forget":
        return int(call.result)
    if call.operation == "get":
        return int(call.result is not None)
    return None


def _records_of(call: catalogue.StoreCall) -> list[dict[str, Any]] | None:
    """``gen_ai.memory.records`` (its JSON schema: content, id, score, metadata) for a
    call that stored or retrieved records; None for the others."""
    result = call.result
    if call.operation in ("write", "upsert", "supersede", "search"):
        return [_record_json(item) for item in result]
    if call.operation == "get":
        return [] if result is None else [_record_json(result)]
    return None


def _record_json(item: MemoryRecord | MemoryHit) -> dict[str, Any]:
    record = item.record if isinstance(item, MemoryHit) else item
    found: dict[str, Any] = {
        "id": record.id,
        "content": record.content,
        "metadata": {"kind": record.kind},
    }
    if isinstance(item, MemoryHit) and item.score is not None:
        found["score"] = item.score
    return found


class OtelInstrumentation:
    """``StoreTelemetry`` for OpenTelemetry. Never raises because of a provider or exporter.

    ``include_scope`` (default True) puts the scope pairs on spans and records as
    ``recallstore.scope.<key>``: the conventions have no scope, and a store id alone
    cannot tell one tenant's calls from another's. They are the host's identifiers
    (tenant, user ids), never memory content; turn it off when your telemetry backend
    must not hold them (a user id may be an e-mail address).

    ``capture_content`` puts ``gen_ai.memory.query.text`` and ``gen_ai.memory.records``
    on spans; None (the default) reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
    once, here (``true``, ``SPAN_ONLY`` or ``SPAN_AND_EVENT``, any case).
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        include_scope: bool = True,
        capture_content: bool | None = None,
    ) -> None:
        try:
            from opentelemetry import _logs, trace
        except ImportError:
            raise MissingDependencyError("OpenTelemetry instrumentation", "otel") from None

        self._trace_api = trace
        self._tracer = trace.get_tracer(
            INSTRUMENTATION_NAME, __version__, tracer_provider=tracer_provider
        )
        self._log_api = _logs
        self._otel_logger = _logs.get_logger(
            INSTRUMENTATION_NAME, __version__, logger_provider=logger_provider
        )
        self.include_scope = include_scope
        self.capture_content = (
            semconv.capture_content_from_env() if capture_content is None else capture_content
        )
        self.failures = 0

    @contextmanager
    def operation(
        self, operation: catalogue.StoreOperation, *, record_id: str | None = None
    ) -> Iterator[_SpanTrace]:
        """A span around one store call; an exception from the call marks it as an error."""
        from opentelemetry import context as context_api
        from opentelemetry.trace import SpanKind, Status, StatusCode

        name = semconv.OPERATION_NAMES[operation]
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: name,
            catalogue.RECALLSTORE_OPERATION: operation,
        }
        if record_id is not None:
            attributes[semconv.GEN_AI_MEMORY_RECORD_ID] = record_id
        span = self._guard(
            lambda: self._tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attributes)
        )
        token = None
        if span is not None:
            token = self._guard(
                lambda: context_api.attach(self._trace_api.set_span_in_context(span))
            )
        try:
            yield _SpanTrace(self, span)
        except BaseException as exc:
            if span is not None:
                error_type = type(exc).__qualname__

                def mark_error() -> None:
                    # Only the type: exception messages may quote memory content.
                    span.set_attribute(catalogue.ERROR_TYPE, error_type)
                    span.set_status(Status(StatusCode.ERROR, error_type))

                self._guard(mark_error)
            raise
        finally:
            if token is not None:
                self._guard(lambda: context_api.detach(token))
            if span is not None:
                self._guard(span.end)

    def emit(self, event: MemoryEvent) -> None:
        """Emit ``event`` as a log record in the current context (used for recalls)."""
        self._emit(event, None)

    def _emit(self, event: MemoryEvent, span: Span | None) -> None:
        from opentelemetry._logs import SeverityNumber

        context: Context | None = None
        if span is not None:
            context = self._guard(lambda: self._trace_api.set_span_in_context(span))
        self._guard(
            lambda: self._otel_logger.emit(
                timestamp=int(event.timestamp.timestamp() * 1e9),
                observed_timestamp=time.time_ns(),
                context=context,
                severity_number=SeverityNumber.INFO,
                severity_text="INFO",
                body=event.model_dump(mode="json"),
                attributes=self._attributes(event),
                event_name=event.type,
            )
        )

    def _attributes(self, event: MemoryEvent) -> dict[str, catalogue.AttributeValue]:
        return catalogue.event_attributes(event, include_scope=self.include_scope)

    def _guard(self, call: Callable[[], _T]) -> _T | None:
        try:
            return call()
        except Exception:
            self.failures += 1
            if self.failures == 1:
                _logger.exception(
                    "OpenTelemetry failed; the memory call was unaffected "
                    "(later failures are only counted)"
                )
            return None
