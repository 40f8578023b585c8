"""Each store call against the merged OpenTelemetry GenAI memory conventions
(semantic-conventions-genai, ``model/gen-ai/spans.yaml``, span ``gen_ai.memory.client``),
read back from the SDK's in-memory span exporter.

The expected table below is written from the conventions' text, not from
``recallstore.events._genai_memory``: a renamed constant there fails here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.events import EventBus, ObservedMemoryStore
from recallstore.events.otel import OtelInstrumentation

USER = {"tenant": "acme", "user": "u1"}
SECRET_CODE = "QX-4417"  # never part of an id, a time or a hex trace id
SECRET = f"the gate code is {SECRET_CODE}"

# From the conventions' text. "Span name SHOULD be {gen_ai.operation.name}."
# Operation names: create_memory (caller requests new records), update_memory (known
# existing records), upsert_memory (may create or update without the caller choosing),
# delete_memory, search_memory.
OPERATION = "gen_ai.operation.name"  # required
STORE_ID = "gen_ai.memory.store.id"  # conditionally required: if applicable
RECORD_ID = "gen_ai.memory.record.id"  # conditionally required: one specific record
RECORD_COUNT = "gen_ai.memory.record.count"  # recommended: returned / attempted
QUERY_TEXT = "gen_ai.memory.query.text"  # opt-in
RECORDS = "gen_ai.memory.records"  # opt-in
CONTENT = {QUERY_TEXT, RECORDS}
# Every attribute the memory span may carry under gen_ai.* or a general namespace; the
# rest must be recallstore.* (our own).
CONVENTION = {
    OPERATION,
    STORE_ID,
    RECORD_ID,
    RECORD_COUNT,
    QUERY_TEXT,
    RECORDS,
    "gen_ai.provider.name",
    "gen_ai.conversation.id",
    "server.address",
    "server.port",
    "error.type",
}


@dataclass(frozen=True)
class Expected:
    """One store call's span, as the conventions describe it."""

    name: str
    record_id: bool  # concerns one specific record
    count: int


@dataclass
class Traced:
    spans: InMemorySpanExporter
    provider: TracerProvider

    def store(self, inner: Any, **options: Any) -> ObservedMemoryStore:
        telemetry = OtelInstrumentation(tracer_provider=self.provider, **options)
        return ObservedMemoryStore(inner, EventBus(), telemetry=telemetry)

    def last(self) -> tuple[ReadableSpan, dict[str, Any]]:
        span = list(self.spans.get_finished_spans())[-1]
        return span, dict(span.attributes or {})


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[Traced]:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield Traced(spans, provider)
    provider.shutdown()


def check(
    span: ReadableSpan, attributes: dict[str, Any], expected: Expected, store_id: str
) -> None:
    """The span against the conventions: its name, the required and conditional
    attributes, the count, no content, and nothing invented outside ``recallstore.*``."""
    assert span.name == expected.name
    assert attributes[OPERATION] == expected.name
    assert store_id is not None
    assert attributes[STORE_ID] == store_id
    assert (RECORD_ID in attributes) is expected.record_id
    assert attributes[RECORD_COUNT] == expected.count
    assert not CONTENT & attributes.keys()
    invented = [k for k in attributes if k not in CONVENTION and not k.startswith("recallstore.")]
    assert not invented
    assert SECRET_CODE not in span.to_json()


async def seeded(sqlite_store: SqliteMemoryStore) -> str:
    [record] = await sqlite_store.write([MemoryWriteInput(scope=USER, content=SECRET)])
    return record.id


async def test_a_write_is_create_memory(traced, sqlite_store) -> None:
    store = traced.store(sqlite_store)
    [record] = await store.write([MemoryWriteInput(scope=USER, content=SECRET)])
    span, attributes = traced.last()
    check(span, attributes, Expected("create_memory", True, 1), sqlite_store.store_id)
    assert attributes[RECORD_ID] == record.id


async def test_a_batch_write_counts_what_it_attempted_and_names_no_one_record(
    traced, sqlite_store
) -> None:
    store = traced.store(sqlite_store)
    inputs = [MemoryWriteInput(scope=USER, content=f"note {n}") for n in range(3)]
    await store.write(inputs)
    span, attributes = traced.last()
    check(span, attributes, Expected("create_memory", False, 3), sqlite_store.store_id)


async def test_a_write_with_an_idempotency_key_is_upsert_memory(traced, sqlite_store) -> None:
    store = traced.store(sqlite_store)
    keyed = MemoryWriteInput(scope=USER, content=SECRET, idempotency_key="door")
    [first] = await store.write([keyed])
    span, attributes = traced.last()
    check(span, attributes, Expected("upsert_memory", True, 1), sqlite_store.store_id)
    [again] = await store.write([keyed])  # the store chose: the same record back
    span, attributes = traced.last()
    check(span, attributes, Expected("upsert_memory", True, 1), sqlite_store.store_id)
    assert again.id == first.id == attributes[RECORD_ID]


async def test_a_supersede_is_update_memory(traced, sqlite_store) -> None:
    old = await seeded(sqlite_store)
    store = traced.store(sqlite_store)
    [new] = await store.write([MemoryWriteInput(scope=USER, content="gone", supersedes=old)])
    span, attributes = traced.last()
    check(span, attributes, Expected("update_memory", True, 1), sqlite_store.store_id)
    assert attributes[RECORD_ID] == new.id


async def test_an_invalidate_is_update_memory(traced, sqlite_store) -> None:
    record_id = await seeded(sqlite_store)
    store = traced.store(sqlite_store)
    await store.invalidate(record_id, reason=SECRET)
    span, attributes = traced.last()
    check(span, attributes, Expected("update_memory", True, 1), sqlite_store.store_id)
    assert attributes[RECORD_ID] == record_id


async def test_a_delete_is_delete_memory(traced, sqlite_store) -> None:
    record_id = await seeded(sqlite_store)
    store = traced.store(sqlite_store)
    await store.delete(record_id)
    span, attributes = traced.last()
    check(span, attributes, Expected("delete_memory", True, 1), sqlite_store.store_id)
    assert attributes[RECORD_ID] == record_id


async def test_a_forget_is_delete_memory_with_no_record_id_and_the_count(
    traced, sqlite_store
) -> None:
    await sqlite_store.write([MemoryWriteInput(scope=USER, content=f"n{n}") for n in range(4)])
    store = traced.store(sqlite_store)
    assert await store.forget(USER) == 4
    span, attributes = traced.last()
    check(span, attributes, Expected("delete_memory", False, 4), sqlite_store.store_id)


async def test_a_search_is_search_memory_counting_what_it_returned(traced, sqlite_store) -> None:
    await seeded(sqlite_store)
    await sqlite_store.write([MemoryWriteInput(scope=USER, content="the gate is green")])
    store = traced.store(sqlite_store)
    hits = await store.search(MemorySearchQuery(query="gate code", scope=USER, limit=5))
    span, attributes = traced.last()
    check(span, attributes, Expected("search_memory", False, len(hits)), sqlite_store.store_id)
    assert len(hits) == 2


async def test_a_get_is_search_memory_for_one_record(traced, sqlite_store) -> None:
    record_id = await seeded(sqlite_store)
    store = traced.store(sqlite_store)
    await store.get(record_id)
    span, attributes = traced.last()
    check(span, attributes, Expected("search_memory", True, 1), sqlite_store.store_id)
    await store.get("01aaaaaaaaaaaaaaaaaaaaaaaa")
    span, attributes = traced.last()
    check(span, attributes, Expected("search_memory", True, 0), sqlite_store.store_id)


@pytest.mark.parametrize("value", ["true", "True", " TRUE ", "span_only", "SPAN_AND_EVENT"])
async def test_content_is_captured_on_the_users_opt_in(
    traced, sqlite_store, monkeypatch, value
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    store = traced.store(sqlite_store)
    [record] = await store.write([MemoryWriteInput(scope=USER, content=SECRET)])
    _, written = traced.last()
    assert json.loads(written[RECORDS]) == [
        {"id": record.id, "content": SECRET, "metadata": {"kind": "fact"}}
    ]
    await store.search(MemorySearchQuery(query="gate code", scope=USER))
    _, found = traced.last()
    assert found[QUERY_TEXT] == "gate code"
    [hit] = json.loads(found[RECORDS])
    assert (hit["id"], hit["content"]) == (record.id, SECRET)
    assert isinstance(hit["score"], float)
    await store.get(record.id)
    _, got = traced.last()
    assert [item["content"] for item in json.loads(got[RECORDS])] == [SECRET]


@pytest.mark.parametrize("value", ["", "false", "NO_CONTENT", "EVENT_ONLY", "yes", "1"])
async def test_no_content_without_the_opt_in(traced, sqlite_store, monkeypatch, value) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    store = ObservedMemoryStore(
        sqlite_store,
        EventBus(),
        # The events' own opt-in puts content in events, not on spans.
        include_content=True,
        include_query_text=True,
        telemetry=OtelInstrumentation(tracer_provider=traced.provider),
    )
    [record] = await store.write([MemoryWriteInput(scope=USER, content=SECRET)])
    await store.search(MemorySearchQuery(query="gate code", scope=USER))
    await store.get(record.id)
    for span in traced.spans.get_finished_spans():
        assert not CONTENT & dict(span.attributes or {}).keys()
        assert SECRET_CODE not in span.to_json()
        assert "gate" not in span.to_json()


async def test_the_store_id_is_stable_across_openings_and_differs_between_stores(
    tmp_path: Path,
) -> None:
    ids: list[str | None] = []
    for path, read_only in [("a.db", False), ("a.db", False), ("a.db", True), ("b.db", False)]:
        async with SqliteMemoryStore(tmp_path / path, read_only=read_only) as store:
            ids.append(store.store_id)
    first, again, reading, other = ids
    assert first is not None
    assert len(first) == 32
    assert int(first, 16) >= 0  # hex digits: no path, no URL, no content
    assert first == again == reading
    assert other is not None
    assert other != first
    one, two = InMemoryMemoryStore(), InMemoryMemoryStore()
    assert one.store_id
    assert two.store_id
    assert one.store_id != two.store_id
    assert SqliteMemoryStore(tmp_path / "a.db").store_id is None  # not open yet
