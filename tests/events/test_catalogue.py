"""The event catalogue is the one source of every event type: each entry has a model, an
OpenTelemetry mapping, a manifest entry, an emit site and a lens renderer, and the type
lists, the parser and the manifest follow the catalogue, not a list of their own."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Literal, get_args

import pytest
from pydantic import Field, ValidationError

import recallstore.dashboard
from recallstore import MemoryTarget, MemoryWriteInput, PromotionGate, Provenance, call_context
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.events import EventBus, MemoryEvent, ObservedMemoryStore
from recallstore.events.catalogue import (
    EVENT_CATALOGUE,
    EVENT_MODELS,
    EVENT_TYPES,
    MEMORY_EVENT_TYPES,
    OPERATION_NAMES,
    EventType,
    OtelAttribute,
    StoreOperation,
    catalogue_entry,
    event_attributes,
    event_parser,
    parse_event,
)
from recallstore.events.manifest import build_manifest, render_events_doc
from recallstore.events.models import (
    GAP_EVENT_TYPE,
    EventData,
    MemoryWriteEvent,
    WriteOperation,
)
from recallstore.learning import assemble_learned
from recallstore.recall import assemble_recall
from recallstore.records import MemorySearchQuery

STATIC = Path(recallstore.dashboard.__file__).parent / "static"
USER = {"tenant": "acme", "user": "u1"}


def _renderer_types(script: str) -> list[str]:
    start = script.index("var RENDERERS = {")
    end = script.index("\n  };", start)
    return re.findall(r'^\s{4}"([^"]+)": function', script[start:end], re.M)


def _names_a_field(entry: EventType[Any], source: str) -> bool:
    """Whether the manifest's "from" text of an attribute starts with a real field."""
    path = source.split(" ", 1)[0]
    head, _, rest = path.partition(".")
    if head == "data":
        return rest.partition("[")[0] in entry.data_model.model_fields
    return head in entry.model.model_fields


async def _one_of_each(store_path: Path) -> list[MemoryEvent]:
    """Every event a short session over an observed SQLite store publishes."""
    bus = EventBus()
    seen: list[MemoryEvent] = []
    bus.add_listener(seen.append)
    async with SqliteMemoryStore(store_path) as inner:
        store = ObservedMemoryStore(inner, bus)
        with call_context(conversation_id="conv-1"):
            (first,) = await store.write([MemoryWriteInput(scope=USER, content="tea, no sugar")])
            await store.write(
                [MemoryWriteInput(scope=USER, content="tea with honey", supersedes=first.id)]
            )
            await store.search(MemorySearchQuery(query="tea", scope=USER))
            await assemble_recall(store, USER, "what do I drink?")
            await store.delete(first.id)
            (lesson,) = await store.write(
                [
                    MemoryWriteInput(
                        scope=USER, content="metric units", provenance=Provenance(author="u")
                    )
                ]
            )
            await store.corroborate(
                USER, lesson.id, Provenance(conversation_id="conv-2"), actor="host", reason="again"
            )
            gate = PromotionGate(min_supports=1, min_conversations=1, approval_for=frozenset())
            target = MemoryTarget(section="background")
            await store.promote(USER, lesson.id, target, gate=gate, actor="host", reason="taught")
            await assemble_learned(store, USER)
    return seen


def test_every_entry_has_a_model_an_otel_mapping_a_manifest_entry_and_a_renderer() -> None:
    manifest = build_manifest()
    renderers = _renderer_types((STATIC / "lens.js").read_text(encoding="utf-8"))
    assert EVENT_CATALOGUE
    for entry in EVENT_CATALOGUE:
        assert entry.model.model_fields["type"].default == entry.name
        assert issubclass(entry.data_model, EventData)
        assert entry.attributes, f"{entry.name} has no OpenTelemetry attributes"
        unnamed = [a.source for a in entry.attributes if not _names_a_field(entry, a.source)]
        assert not unnamed, f"{entry.name}: attributes read from no field: {unnamed}"
        published = manifest["events"][entry.name]
        assert published["otel"]["attributes"] == {a.name: a.source for a in entry.attributes}
        assert published["schema"] == entry.model.model_json_schema(mode="serialization")
        span = published["otel"]["span"]
        assert (span or {}).get("operations", {}) == {
            op: OPERATION_NAMES[op] for op in entry.operations
        }
        assert entry.name in renderers or entry.lens is not None, (
            f"lens.js has no renderer for {entry.name}, and it declares no lens view"
        )


def test_the_type_lists_the_manifest_and_the_parser_follow_the_catalogue() -> None:
    names = tuple(entry.name for entry in EVENT_CATALOGUE)
    assert MEMORY_EVENT_TYPES == names == tuple(EVENT_MODELS)
    assert (*names, GAP_EVENT_TYPE) == EVENT_TYPES
    assert build_manifest()["event_types"] == list(EVENT_TYPES)
    assert catalogue_entry(names[0]) is EVENT_CATALOGUE[0]
    with pytest.raises(KeyError, match=r"agent\.memory\.nope"):
        catalogue_entry("agent.memory.nope")


def test_supersede_is_one_operation_in_the_event_the_span_and_the_manifest() -> None:
    write = catalogue_entry("agent.memory.write")
    # Every write operation, plus the write calls whose event names another: an upsert
    # (a keyed write) says "write", a forget says "delete".
    assert write.operations == (*get_args(WriteOperation), "upsert", "forget")
    assert "supersede" in write.operations
    manifest_write = build_manifest()["events"]["agent.memory.write"]
    data_schema = manifest_write["schema"]["$defs"]["MemoryWriteData"]
    assert data_schema["properties"]["operation"]["enum"] == list(get_args(WriteOperation))
    assert set(manifest_write["otel"]["span"]["operations"]) == set(write.operations)
    # Every traced store call is named, and its span carries at most one event type.
    assert set(get_args(StoreOperation)) == set(OPERATION_NAMES)
    carried = [op for entry in EVENT_CATALOGUE for op in entry.operations]
    assert len(carried) == len(set(carried))
    assert set(carried) <= set(OPERATION_NAMES)


async def test_each_entry_is_emitted_as_its_model_and_parses_back(tmp_path: Path) -> None:
    events = await _one_of_each(tmp_path / "memory.db")
    assert {event.type for event in events} == set(MEMORY_EVENT_TYPES)
    for event in events:
        entry = catalogue_entry(event.type)
        assert type(event) is entry.model
        assert parse_event(event.model_dump_json()) == event
        attributes = event_attributes(event)
        for attribute in entry.attributes:
            if attribute.read(event) is not None:
                assert attribute.name in attributes
    write, supersede = events[0].data, events[1].data
    assert (write.operation, supersede.operation) == ("write", "supersede")  # type: ignore[attr-defined]


class _ForgetData(EventData):
    """A whole scope forgotten."""

    forgotten: int = Field(ge=0)
    """Records removed."""


class _ForgetEvent(MemoryEvent):
    """``test.memory.forget``: a scope forgotten."""

    type: Literal["test.memory.forget"] = "test.memory.forget"
    """The event type."""
    data: _ForgetData
    """The payload."""


_FORGET = EventType(
    name="test.memory.forget",
    model=_ForgetEvent,
    operations=("delete",),
    attributes=(
        OtelAttribute[_ForgetEvent](
            "recallstore.forget.count", "data.forgotten", lambda e: e.data.forgotten
        ),
    ),
)


def test_a_new_entry_reaches_the_parser_the_otel_mapping_and_the_manifest() -> None:
    catalogue = (*EVENT_CATALOGUE, _FORGET)
    event = _ForgetEvent(scope=USER, data=_ForgetData(forgotten=3))
    parsed = event_parser(catalogue).validate_json(event.model_dump_json())
    assert isinstance(parsed, _ForgetEvent)
    assert parsed.data.forgotten == 3
    with pytest.raises(ValidationError, match=r"test\.memory\.forget"):
        parse_event(event.model_dump_json())  # not in the real catalogue

    manifest = build_manifest(event_catalogue=catalogue)
    assert manifest["event_types"] == [*MEMORY_EVENT_TYPES, "test.memory.forget", GAP_EVENT_TYPE]
    forget = manifest["events"]["test.memory.forget"]
    assert forget["description"] == "A whole scope forgotten."
    assert forget["otel"]["attributes"] == {"recallstore.forget.count": "data.forgotten"}
    assert forget["otel"]["span"]["operations"] == {"delete": "delete_memory"}
    assert "## `test.memory.forget`" in render_events_doc(manifest)
    assert _FORGET.attributes[0].read(event) == 3


def test_a_malformed_entry_is_refused_naming_the_offending_value() -> None:
    with pytest.raises(ValueError, match=r"'agent\.memory\.nope'.*'agent\.memory\.write'"):
        EventType(name="agent.memory.nope", model=MemoryWriteEvent, attributes=())
    with pytest.raises(ValueError, match="'erase'"):
        EventType(
            name="agent.memory.write",
            model=MemoryWriteEvent,
            attributes=(),
            operations=("erase",),  # type: ignore[arg-type]
        )
    with pytest.raises(ValueError, match=r"'test\.memory\.nope'"):
        build_manifest({"test.memory.nope": _ForgetEvent})


def test_the_lens_names_event_types_only_in_its_renderers() -> None:
    script = (STATIC / "lens.js").read_text(encoding="utf-8")
    renderer_lines = set(re.findall(r'^\s{4}"[^"]+": function.*$', script, re.M))
    code = [line for line in script.splitlines() if not line.lstrip().startswith("//")]
    for line in code:
        if re.search(r'"(agent\.memory\.[a-z_]+|gap)"', line):
            assert line in renderer_lines, f"lens.js names an event type outside RENDERERS: {line}"
    assert "agent.memory" not in (STATIC / "lens.css").read_text(encoding="utf-8")


def _chromium() -> str:
    found = os.environ.get("RECALLSTORE_CHROMIUM") or shutil.which("chromium")
    if not found:
        if os.environ.get("RECALLSTORE_REQUIRE_BROWSER") == "1":
            pytest.fail("no Chromium found, and RECALLSTORE_REQUIRE_BROWSER=1 requires it")
        pytest.skip("no Chromium found")
    return found


@pytest.mark.browser
def test_the_lens_renders_each_entry_and_derives_its_kind(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = _chromium()
    events = asyncio.run(_one_of_each(tmp_path / "memory.db"))
    listed = [*EVENT_TYPES, "agent.memory.unrendered"]
    page_html = (
        "<!doctype html><ol id='feed' data-events-url='/nowhere' data-record-url='/records/' "
        f"data-event-types='{json.dumps(listed)}'></ol>"
    )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--headless=new", "--no-sandbox"], timeout=60_000
        )
        try:
            page = browser.new_page()
            page.set_content(page_html)
            page.add_script_tag(content=(STATIC / "lens.js").read_text(encoding="utf-8"))
            for event in events:
                rendered = page.evaluate(
                    """envelope => {
                        const item = window.RecallstoreLens.renderEvent(envelope);
                        return {kind: item.dataset.kind,
                                summary: item.querySelector(".summary").textContent,
                                generic: item.querySelector(".generic") !== null};
                    }""",
                    event.model_dump(mode="json"),
                )
                assert rendered["kind"] == event.type.rsplit(".", 1)[-1], rendered
                assert not rendered["generic"], f"{event.type} fell back to the generic view"
                assert rendered["summary"] not in ("", "event")
            supersede = page.evaluate(
                "e => window.RecallstoreLens.renderEvent(e).textContent",
                events[1].model_dump(mode="json"),
            )
            assert "supersede · 1 record written" in supersede
            kinds = page.evaluate(
                """() => ["gap", "agent.memory.unrendered", "custom.other"].map(
                    window.RecallstoreLens.kindOf)"""
            )
            assert kinds == ["gap", "other", "other"]
        finally:
            browser.close()


@pytest.mark.browser
def test_the_lens_renders_a_declared_view_as_text(tmp_path: Path) -> None:
    # A type lens.js has no renderer for is shown from its catalogue lens view
    # (EventType.lens), its data inserted as text, never as HTML.
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = _chromium()
    listed = [*EVENT_TYPES, "agent.memory.read"]
    views = {"agent.memory.read": {"summary": "read · {record_id}", "details": ["found"]}}
    page_html = (
        "<!doctype html><ol id='feed' data-events-url='/nowhere' data-record-url='/records/' "
        f"data-event-types='{json.dumps(listed)}' data-event-lens='{json.dumps(views)}'></ol>"
    )
    envelope = {
        "type": "agent.memory.read",
        "id": 7,
        "timestamp": "2026-12-01T10:00:00.000000Z",
        "scope": {"user": "u1"},
        "data": {"record_id": "<img src=x onerror=window.__pwned=1>", "found": True},
    }
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--headless=new", "--no-sandbox"], timeout=60_000
        )
        try:
            page = browser.new_page()
            page.set_content(page_html)
            page.add_script_tag(content=(STATIC / "lens.js").read_text(encoding="utf-8"))
            rendered = page.evaluate(
                """envelope => {
                    const item = window.RecallstoreLens.renderEvent(envelope);
                    document.getElementById("feed").appendChild(item);
                    return {kind: item.dataset.kind,
                            summary: item.querySelector(".summary").textContent,
                            text: item.textContent,
                            images: item.querySelectorAll("img").length,
                            generic: item.querySelector(".generic") !== null};
                }""",
                envelope,
            )
            assert rendered["kind"] == "read"
            assert rendered["summary"] == "read · <img src=x onerror=window.__pwned=1>"
            assert "found" in rendered["text"]
            assert "true" in rendered["text"]
            assert rendered["images"] == 0
            assert not rendered["generic"]
            assert page.evaluate("window.__pwned === undefined")
        finally:
            browser.close()
