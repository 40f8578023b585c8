"""OpenTelemetry for memory: a span per store call, events as log records (extra ``otel``).

Pass an :class:`OtelInstrumentation` to ``ObservedMemoryStore(..., telemetry=...)``:

* every store call runs inside a span named by the GenAI memory conventions
  (``update_memory`` for writes, supersedes and invalidations, ``delete_memory``,
  ``search_memory``) with
  ``gen_ai.operation.name``, ``gen_ai.memory.record.id`` for single-record calls,
  ``recallstore.record.count``, ``gen_ai.conversation.id`` and ``recallstore.*``;
* each event is emitted as a log record with ``event_name`` = the event type, the
  envelope as its body, inside that span (a recall's inside whatever span is active);
* the attributes are read from the event, so telemetry never holds more than the event:
  ``gen_ai.memory.query.text`` appears only with ``include_query_text``, content only
  (in the log body) with ``include_content``;
* a failing processor or exporter never raises into the agent: the failure is logged
  once and counted in :attr:`OtelInstrumentation.failures`.

Only ``opentelemetry-api`` is used; spans and records go to whatever providers the host
configured (the global ones unless given).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from recallstore._version import __version__
from recallstore.errors import MissingDependencyError
from recallstore.events import catalogue
from recallstore.events.models import MemoryEvent

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


class OtelInstrumentation:
    """``StoreTelemetry`` for OpenTelemetry. Never raises because of a provider or exporter.

    ``include_scope`` (default True) puts the scope pairs on spans and records as
    ``recallstore.scope.<key>``: they are identifiers (tenant, user ids), not memory
    content; turn it off when your telemetry backend must not hold them.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        include_scope: bool = True,
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
        self.failures = 0

    @contextmanager
    def operation(
        self, operation: catalogue.StoreOperation, *, record_id: str | None = None
    ) -> Iterator[_SpanTrace]:
        """A span around one store call; an exception from the call marks it as an error."""
        from opentelemetry import context as context_api
        from opentelemetry.trace import SpanKind, Status, StatusCode

        name = catalogue.OPERATION_NAMES[operation]
        attributes: dict[str, Any] = {
            catalogue.GEN_AI_OPERATION_NAME: name,
            catalogue.RECALLSTORE_OPERATION: operation,
        }
        if record_id is not None:
            attributes[catalogue.GEN_AI_MEMORY_RECORD_ID] = record_id
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
