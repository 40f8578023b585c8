"""OpenTelemetry: spans per store call and events as log records, read back from the SDK's
in-memory exporters; no content unless opted in; a broken pipeline never raises."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from recallstore import (
    MemoryConflictError,
    MemorySearchQuery,
    MemoryWriteInput,
    call_context,
)
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.events import EventBus, ObservedMemoryStore
from recallstore.events.otel import OtelInstrumentation
from recallstore.recall import assemble_recall

USER = {"tenant": "acme", "user": "u1"}
# Upper case and a hyphen: never part of a timestamp, a hex trace id or a record id,
# so finding it in exported telemetry means the content leaked (plain digits did not).
SECRET_CODE = "QX-4417"
SECRET = f"the door code is {SECRET_CODE}"


@dataclass
class Pipeline:
    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter
    tracer_provider: TracerProvider
    logger_provider: LoggerProvider

    def instrumentation(self, **options: Any) -> OtelInstrumentation:
        return OtelInstrumentation(
            tracer_provider=self.tracer_provider, logger_provider=self.logger_provider, **options
        )

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())


@pytest.fixture
def pipeline() -> Iterator[Pipeline]:
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    yield Pipeline(spans, logs, tracer_provider, logger_provider)
    tracer_provider.shutdown()
    logger_provider.shutdown()


async def test_spans_follow_the_genai_memory_conventions(
    pipeline: Pipeline, sqlite_store: SqliteMemoryStore
) -> None:
    store = ObservedMemoryStore(sqlite_store, EventBus(), telemetry=pipeline.instrumentation())
    with call_context(conversation_id="conv-1", run_id="run-1"):
        (first,) = await store.write([MemoryWriteInput(scope=USER, content=SECRET)])
        (second,) = await store.write(
            [MemoryWriteInput(scope=USER, content="code 9001", supersedes=first.id)]
        )
        await store.search(MemorySearchQuery(query="door code", scope=USER))
        await store.get(second.id)
        await store.invalidate(second.id, reason="moved")
        await store.delete(first.id)

    spans = pipeline.finished()
    names = [span.name for span in spans]
    assert names == [
        "create_memory",
        "update_memory",
        "search_memory",
        "search_memory",
        "update_memory",
        "delete_memory",
    ]
    create, supersede, search, get, invalidate, delete = (dict(s.attributes or {}) for s in spans)
    assert all(span.kind is SpanKind.INTERNAL for span in spans)
    assert all(span.instrumentation_scope is not None for span in spans)
    assert {span.instrumentation_scope.name for span in spans if span.instrumentation_scope} == {
        "recallstore"
    }
    assert create["gen_ai.operation.name"] == "create_memory"
    assert create["gen_ai.memory.record.id"] == first.id
    assert create["gen_ai.memory.record.count"] == 1
    assert create["gen_ai.memory.store.id"] == sqlite_store.store_id
    assert create["gen_ai.conversation.id"] == "conv-1"
    assert create["recallstore.run_id"] == "run-1"
    assert create["recallstore.scope.user"] == "u1"
    assert create["recallstore.record.kinds"] == ("fact",)
    assert supersede["recallstore.superseded_ids"] == (first.id,)
    # One vocabulary: the span's operation is the event's data.operation.
    assert supersede["recallstore.operation"] == "supersede"
    assert search["gen_ai.operation.name"] == "search_memory"
    assert search["gen_ai.memory.record.count"] == 1
    assert search["recallstore.search.query_chars"] == len("door code")
    assert "gen_ai.memory.query.text" not in search
    assert get["recallstore.operation"] == "get"
    assert get["gen_ai.memory.record.id"] == second.id
    assert invalidate["gen_ai.operation.name"] == "update_memory"
    assert invalidate["gen_ai.memory.record.id"] == second.id
    assert invalidate["recallstore.reason_chars"] == len("moved")
    assert delete["gen_ai.operation.name"] == "delete_memory"
    assert delete["gen_ai.memory.record.id"] == first.id
    exported = "".join(span.to_json() for span in spans)
    assert SECRET_CODE not in exported
    assert "door" not in exported
    assert "moved" not in exported


async def test_events_are_log_records_parented_to_their_store_call_span(
    pipeline: Pipeline, sqlite_store: SqliteMemoryStore
) -> None:
    store = ObservedMemoryStore(sqlite_store, EventBus(), telemetry=pipeline.instrumentation())
    tracer = pipeline.tracer_provider.get_tracer("host")
    with tracer.start_as_current_span("invoke_agent") as agent_span:
        await store.write([MemoryWriteInput(scope=USER, kind="profile", content=SECRET)])
        await store.search(MemorySearchQuery(query="door", scope=USER))
        recall = await assemble_recall(store, USER, "door?", conversation_id="conv-2")

    spans = {span.context.span_id: span for span in pipeline.finished()}
    records = [item.log_record for item in pipeline.logs.get_finished_logs()]
    assert [r.event_name for r in records] == [
        "agent.memory.write",
        "agent.memory.search",
        "agent.memory.search",
        "agent.memory.search",
        "agent.memory.recall",
    ]
    for record in records[:4]:
        span = spans[record.span_id]
        assert record.trace_id == span.context.trace_id
        expected = "create_memory" if record.event_name == "agent.memory.write" else "search_memory"
        assert span.name == expected
        assert span.parent is not None
        assert span.parent.span_id == agent_span.get_span_context().span_id
        assert record.body["id"] == record.attributes["recallstore.event.id"]  # type: ignore[index,call-overload]
    # The recall is not a store call: its record sits in the host's active span.
    assert records[4].span_id == agent_span.get_span_context().span_id
    body = records[4].body
    assert isinstance(body, dict)
    assert body["data"]["record_ids"] == [entry.id for entry in recall.entries]
    assert records[4].attributes["gen_ai.conversation.id"] == "conv-2"  # type: ignore[index]
    assert SECRET_CODE not in str([(r.body, r.attributes) for r in records])


async def test_query_text_and_content_only_with_opt_in(
    pipeline: Pipeline, sqlite_store: SqliteMemoryStore
) -> None:
    store = ObservedMemoryStore(
        sqlite_store,
        EventBus(),
        include_content=True,
        include_query_text=True,
        telemetry=pipeline.instrumentation(capture_content=True),
    )
    await store.write([MemoryWriteInput(scope=USER, content=SECRET)])
    await store.search(MemorySearchQuery(query="door code", scope=USER))
    search_span = pipeline.finished()[1]
    assert dict(search_span.attributes or {})["gen_ai.memory.query.text"] == "door code"
    write_record = pipeline.logs.get_finished_logs()[0].log_record
    assert write_record.body["data"]["contents"] == [SECRET]  # type: ignore[index,call-overload]


async def test_scope_attributes_can_be_left_out(
    pipeline: Pipeline, sqlite_store: SqliteMemoryStore
) -> None:
    store = ObservedMemoryStore(
        sqlite_store, EventBus(), telemetry=pipeline.instrumentation(include_scope=False)
    )
    await store.write([MemoryWriteInput(scope=USER, content="x")])
    (span,) = pipeline.finished()
    assert not [key for key in (span.attributes or {}) if key.startswith("recallstore.scope.")]


async def test_a_failed_call_marks_its_span_as_an_error_without_the_message(
    pipeline: Pipeline, sqlite_store: SqliteMemoryStore
) -> None:
    store = ObservedMemoryStore(sqlite_store, EventBus(), telemetry=pipeline.instrumentation())
    (record,) = await store.write([MemoryWriteInput(scope=USER, content="a")])
    await store.invalidate(record.id)
    with pytest.raises(MemoryConflictError):
        await store.write([MemoryWriteInput(scope=USER, content=SECRET, supersedes=record.id)])
    failed = pipeline.finished()[-1]
    assert failed.name == "update_memory"
    assert failed.status.status_code is StatusCode.ERROR
    attributes = dict(failed.attributes or {})
    assert attributes["error.type"] == "MemoryConflictError"
    assert attributes["recallstore.ok"] is False
    assert not failed.events  # no exception event: its message could quote content
    log = pipeline.logs.get_finished_logs()[-1].log_record
    assert log.body["data"]["error"] == "MemoryConflictError"  # type: ignore[index,call-overload]
    assert log.span_id == failed.context.span_id


class _RaisingSpanProcessor(SpanProcessor):
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("span processor down")

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("span processor down")


class _RaisingExporter(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        raise ConnectionError("collector unreachable")


class _RaisingLogProcessor(LogRecordProcessor):
    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        raise RuntimeError("log processor down")

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


async def test_a_broken_pipeline_never_raises_into_the_agent(
    sqlite_store: SqliteMemoryStore,
) -> None:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(_RaisingSpanProcessor())
    tracer_provider.add_span_processor(SimpleSpanProcessor(_RaisingExporter()))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(_RaisingLogProcessor())
    instrumentation = OtelInstrumentation(
        tracer_provider=tracer_provider, logger_provider=logger_provider
    )
    bus = EventBus()
    store = ObservedMemoryStore(sqlite_store, bus, telemetry=instrumentation)
    (record,) = await store.write([MemoryWriteInput(scope=USER, content="still works")])
    assert (await store.search(MemorySearchQuery(query="works", scope=USER)))[0].record == record
    await store.invalidate(record.id)
    await assemble_recall(store, USER, "works")
    assert bus.stats().published == 6  # write, search, invalidate, 2 recall searches, recall
    assert instrumentation.failures > 0
    assert store.observer_failures == 0
    tracer_provider.shutdown()
    logger_provider.shutdown()


async def test_without_providers_the_global_no_op_api_is_used(
    sqlite_store: SqliteMemoryStore,
) -> None:
    instrumentation = OtelInstrumentation()
    store = ObservedMemoryStore(sqlite_store, EventBus(), telemetry=instrumentation)
    await store.write([MemoryWriteInput(scope=USER, content="x")])
    assert instrumentation.failures == 0
