"""Memory that learns in telemetry (issue 39): corroborate, promote and demote are spans
(``update_memory``) carrying ``agent.memory.learn``; the overlay's lines are
``agent.memory.learned``; a refused promotion is a failed span; the journal keeps each
ledger row as an event a journal feed parses; no lesson text leaves in telemetry."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from recallstore import (
    Corroboration,
    MemoryCapability,
    MemoryTarget,
    MemoryWriteInput,
    PromotionGate,
    PromotionRefusedError,
    Provenance,
    SupportsPromotion,
    call_context,
)
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.events import EventBus, MemoryEvent, ObservedMemoryStore, parse_event
from recallstore.events.learning import MemoryLearnedEvent, MemoryLearnEvent
from recallstore.events.otel import OtelInstrumentation

ANA = {"user": "ana"}
LESSON = "Answer in QZ-metric units."
GATE = PromotionGate(approval_for=frozenset())

Exporters = tuple[InMemorySpanExporter, InMemoryLogRecordExporter, OtelInstrumentation]


@pytest.fixture
def telemetry() -> Iterator[Exporters]:
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    yield (
        spans,
        logs,
        OtelInstrumentation(tracer_provider=tracer_provider, logger_provider=logger_provider),
    )
    tracer_provider.shutdown()
    logger_provider.shutdown()


async def test_learning_is_spans_and_events(
    sqlite_store: SqliteMemoryStore, telemetry: Exporters
) -> None:
    spans, logs, instrumentation = telemetry
    bus = EventBus()
    seen: list[MemoryEvent] = []
    bus.add_listener(seen.append)
    store = ObservedMemoryStore(sqlite_store, bus, telemetry=instrumentation)
    (lesson,) = await store.write(
        [MemoryWriteInput(scope=ANA, content=LESSON, provenance=Provenance(conversation_id="c-1"))]
    )
    for conversation in ("c-2", "c-3"):
        with call_context(conversation_id=conversation):
            await store.corroborate(
                ANA, lesson.id, Provenance(conversation_id=conversation), actor="h", reason="r"
            )
    with pytest.raises(PromotionRefusedError):
        await store.promote(
            ANA,
            lesson.id,
            MemoryTarget(section="example"),
            gate=PromotionGate(),
            actor="h",
            reason="r",
        )
    await store.promote(
        ANA, lesson.id, MemoryTarget(section="background"), gate=GATE, actor="h", reason="r"
    )
    capability = MemoryCapability(store, scope_fields=("user",))
    instance = await capability.instantiate(ANA, conversation_id="c-5", first_user_text="units?")
    assert instance.learned_block is not None
    await store.demote(ANA, lesson.id, actor="h", reason="r")

    learn = [e for e in seen if isinstance(e, MemoryLearnEvent)]
    assert [(e.data.action, e.data.ok) for e in learn] == [
        ("corroborate", True),
        ("corroborate", True),
        ("promote", False),
        ("promote", True),
        ("demote", True),
    ]
    assert learn[2].data.error == "PromotionRefusedError"
    assert learn[1].data.supports == 3
    assert learn[3].data.conversation_count == 3
    assert learn[3].data.target == "background"
    assert all(e.data.record_ids == (lesson.id,) for e in learn)
    (learned,) = [e for e in seen if isinstance(e, MemoryLearnedEvent)]
    assert learned.data.record_ids == (lesson.id,)
    assert learned.data.kinds == ("background",)
    assert learned.conversation_id == "c-5"
    assert learned.data.chars == len(instance.learned_block)

    finished = [
        s
        for s in spans.get_finished_spans()
        if dict(s.attributes or {}).get("recallstore.operation")
        in ("corroborate", "promote", "demote")
    ]
    assert [(s.name, dict(s.attributes or {})["recallstore.operation"]) for s in finished] == [
        ("update_memory", "corroborate"),
        ("update_memory", "corroborate"),
        ("update_memory", "promote"),
        ("update_memory", "promote"),
        ("update_memory", "demote"),
    ]
    assert finished[2].status.status_code is StatusCode.ERROR
    assert all(dict(s.attributes or {})["gen_ai.memory.record.id"] == lesson.id for s in finished)
    names = [item.log_record.event_name for item in logs.get_finished_logs()]
    assert names.count("agent.memory.learn") == 5
    assert names.count("agent.memory.learned") == 1
    exported = "".join(s.to_json() for s in spans.get_finished_spans()) + "".join(
        repr(item.log_record.attributes) + repr(item.log_record.body)
        for item in logs.get_finished_logs()
    )
    assert "QZ-metric" not in exported

    journaled = [
        parse_event({**entry.envelope, "id": str(entry.id)})
        for entry in await sqlite_store.read_journal(limit=1_000)
        if entry.envelope["type"] == "agent.memory.learn"
    ]
    assert [(e.type, e.data.action) for e in journaled if isinstance(e, MemoryLearnEvent)] == [
        ("agent.memory.learn", "corroborate"),
        ("agent.memory.learn", "corroborate"),
        ("agent.memory.learn", "promote"),
        ("agent.memory.learn", "demote"),
    ]


async def test_an_observed_store_withdraws_through_to_the_store(
    sqlite_store: SqliteMemoryStore,
) -> None:
    """The batch calls and withdraw reach the wrapped store (no span of their own), so
    an observed store still is a ``SupportsPromotion``."""
    store = ObservedMemoryStore(sqlite_store, EventBus())
    assert isinstance(store, SupportsPromotion)
    (lesson,) = await store.write(
        [MemoryWriteInput(scope=ANA, content=LESSON, provenance=Provenance(conversation_id="c-1"))]
    )
    items = [Corroboration(lesson.id, Provenance(conversation_id="c-2"), "said again")]
    (grown,) = await store.corroborate_all(ANA, items, actor="h")
    assert len(grown.supports) == 2
    (back,) = await store.withdraw_all(ANA, items, actor="h")
    assert back.supports == ()
    await store.corroborate(ANA, lesson.id, items[0].evidence, actor="h", reason="r")
    assert (await store.withdraw(ANA, lesson.id, items[0].evidence, actor="h", reason="r")) == (
        await sqlite_store.get(lesson.id)
    )
    rows = await store.ledger(ANA)
    assert [r.action for r in rows] == ["corroborate", "withdraw"] * 2
