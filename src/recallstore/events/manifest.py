"""``event_manifest.json`` and ``docs/events.md``, generated from the event catalogue.

The manifest lists every event type the SSE stream can send with its description, JSON
schema, SSE framing and OpenTelemetry mapping, all read from
``recallstore.events.catalogue`` (and the models it names). Both files are generated;
a test regenerates them and fails on any difference. Rewrite them with::

    python -m recallstore.events.manifest --write      # or: recallstore events manifest --write

and check them (exit status 1 on drift) with ``--check``. At run time the manifest is
built from the catalogue (:func:`build_manifest`), so an installed package never reads a
stale file; the copy shipped in the wheel is for non-Python consumers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, Final

from recallstore.events import catalogue
from recallstore.events._genai_memory import CALL_ATTRIBUTES
from recallstore.events.catalogue import EVENT_CATALOGUE, EventType
from recallstore.events.models import GAP_EVENT_TYPE, OPT_IN_KEY, MemoryEvent, StreamGap

__all__ = [
    "MANIFEST_FILENAME",
    "MANIFEST_VERSION",
    "WRITE_COMMAND",
    "build_manifest",
    "check_events_doc",
    "check_manifest",
    "load_manifest",
    "main",
    "manifest_event_types",
    "render_events_doc",
    "render_manifest",
    "update_manifest",
    "write_events_doc",
    "write_manifest",
]

MANIFEST_VERSION: Final = 1
MANIFEST_FILENAME: Final = "event_manifest.json"
EVENTS_DOC_PATH: Final = "docs/events.md"
WRITE_COMMAND: Final = "recallstore events manifest --write"

_SSE_DATA = "the event envelope as one line of JSON (see schema)"


def _description(model: object) -> str:
    return " ".join((getattr(model, "__doc__", None) or "").split())


def _opt_in_fields(schema: Mapping[str, Any]) -> dict[str, str]:
    """Field path -> the opt-in flag it needs, for every ``x-opt-in`` in ``schema``."""
    found: dict[str, str] = {}
    for definition in schema.get("$defs", {}).values():
        for name, field in definition.get("properties", {}).items():
            if OPT_IN_KEY in field:
                found[f"data.{name}"] = field[OPT_IN_KEY]
    return dict(sorted(found.items()))


def _otel_mapping(entry: EventType[Any]) -> dict[str, Any]:
    span: dict[str, Any] | None = None
    if entry.operations:
        span = {
            "name": catalogue.SPAN_NAME,
            "operations": {op: catalogue.OPERATION_NAMES[op] for op in entry.operations},
        }
    return {
        "span": span,
        "attributes": {attribute.name: attribute.source for attribute in entry.attributes},
        "log_record": {
            "event_name": entry.name,
            "body": "the event envelope as a map (as in SSE data)",
            "context": entry.log_context,
        },
    }


def _with_models(
    entries: Sequence[EventType[Any]], event_models: Mapping[str, type[MemoryEvent]]
) -> list[EventType[Any]]:
    unknown = sorted(event_models.keys() - {entry.name for entry in entries})
    if unknown:
        raise ValueError(f"event_models names event types not in the catalogue: {unknown}")
    return [replace(entry, model=event_models.get(entry.name, entry.model)) for entry in entries]


def build_manifest(
    event_models: Mapping[str, type[MemoryEvent]] | None = None,
    *,
    event_catalogue: Sequence[EventType[Any]] = EVENT_CATALOGUE,
) -> dict[str, Any]:
    """The manifest as a dict, built from ``event_catalogue`` (default: the real one).

    ``event_models`` replaces the models of some catalogue entries (by event type), e.g.
    to show how a changed model would change the manifest.
    """
    entries = _with_models(event_catalogue, event_models or {})
    events: dict[str, Any] = {}
    for entry in entries:
        schema = entry.model.model_json_schema(mode="serialization")
        events[entry.name] = {
            "category": "memory",
            "description": _description(entry.model.model_fields["data"].annotation),
            "opt_in_fields": _opt_in_fields(schema),
            "schema": schema,
            "sse": {"event": entry.name, "id": "the envelope's id", "data": _SSE_DATA},
            "otel": _otel_mapping(entry),
        }
        if entry.lens is not None:
            # Read by the lens for a type its lens.js has no renderer for.
            events[entry.name]["lens"] = {
                "summary": entry.lens.summary,
                "details": list(entry.lens.details),
            }
    events[GAP_EVENT_TYPE] = {
        "category": "stream",
        "description": _description(StreamGap),
        "opt_in_fields": {},
        "schema": StreamGap.model_json_schema(mode="serialization"),
        "sse": {"event": GAP_EVENT_TYPE, "id": None, "data": "the gap notice as JSON"},
        "otel": None,
    }
    common = {attribute.name: attribute.source for attribute in catalogue.COMMON_ATTRIBUTES}
    scope_name, scope_source = catalogue.SCOPE_ATTRIBUTE_SOURCE
    return {
        "$comment": f"Generated from recallstore.events.catalogue; do not edit. "
        f"Run: {WRITE_COMMAND}",
        "manifest_version": MANIFEST_VERSION,
        "event_types": list(events),
        "envelope": {
            "description": _description(MemoryEvent),
            "fields": {
                name: " ".join((field.description or "").split())
                for name, field in MemoryEvent.model_fields.items()
            },
        },
        "events": events,
        "sse": {
            "media_type": "text/event-stream",
            "auth": "Authorization: Bearer <token> or cookie recallstore_token=<token>; else 401",
            "resume": "Last-Event-ID header (or ?last_event_id=): replay from a bounded buffer "
            "(and, on a journal-fed stream, from the store's journal), led by a gap message "
            "when events were lost",
            "scope_filter": "?scope=key=value (repeatable): events whose scope holds every pair",
            "keep_alive": "comment lines (': ping ...') every ping interval",
        },
        "otel": {
            "instrumentation_scope": "recallstore",
            "span_kind": "INTERNAL",
            "span_name": catalogue.SPAN_NAME,
            "operations": dict(catalogue.OPERATION_NAMES),
            "call_attributes": dict(CALL_ATTRIBUTES),
            "common_attributes": {**common, scope_name: scope_source},
            "attributes": "each event's attributes are set on its store call's span and on "
            "its log record, with the common attributes",
            "error": "span status ERROR and error.type = the exception type name",
        },
    }


def render_manifest(manifest: Mapping[str, Any] | None = None) -> str:
    """The exact text of ``event_manifest.json``: sorted keys, 2-space indent, newline."""
    content = build_manifest() if manifest is None else manifest
    return json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@cache
def _manifest_text() -> str:
    return render_manifest()


def load_manifest() -> dict[str, Any]:
    """The manifest of this installed version, built from the catalogue (a fresh copy)."""
    return json.loads(_manifest_text())  # type: ignore[no-any-return]


def manifest_event_types() -> tuple[str, ...]:
    """Every event type in the manifest, memory events first, then ``gap``."""
    return tuple(load_manifest()["event_types"])


def write_manifest(path: str | Path, manifest: Mapping[str, Any] | None = None) -> None:
    """Write the manifest to ``path``."""
    Path(path).write_text(render_manifest(manifest), encoding="utf-8")


def _differences(expected: Any, actual: Any, where: str) -> list[str]:
    if isinstance(expected, dict) and isinstance(actual, dict):
        found: list[str] = []
        for key in sorted(expected.keys() | actual.keys()):
            at = f"{where}.{key}" if where else str(key)
            if key not in actual:
                found.append(f"{at}: missing from the file")
            elif key not in expected:
                found.append(f"{at}: in the file but not in the catalogue")
            else:
                found.extend(_differences(expected[key], actual[key], at))
        return found
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        found = []
        for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
            found.extend(_differences(left, right, f"{where}[{index}]"))
        return found
    if expected != actual:
        return [f"{where or '<root>'}: file has {actual!r}, the catalogue gives {expected!r}"]
    return []


def check_manifest(path: str | Path, manifest: Mapping[str, Any] | None = None) -> list[str]:
    """Differences between the file at ``path`` and the manifest; empty when in sync."""
    expected_text = render_manifest(manifest)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return [f"{path}: does not exist; run {WRITE_COMMAND}"]
    if text == expected_text:
        return []
    try:
        actual = json.loads(text)
    except json.JSONDecodeError as exc:
        return [f"{path}: not valid JSON ({exc}); run {WRITE_COMMAND}"]
    found = _differences(json.loads(expected_text), actual, "")
    return found or [f"{path}: same content, different formatting; run {WRITE_COMMAND}"]


def _type_label(schema: Mapping[str, Any]) -> str:
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    if "anyOf" in schema:
        return " \\| ".join(_type_label(option) for option in schema["anyOf"])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_type_label(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema:
        return f"object of {_type_label(schema['additionalProperties'])}"
    if schema.get("format") == "date-time":
        return "string (date-time)"
    return str(kind)


def _field_rows(schema: Mapping[str, Any], labels: Mapping[str, str] | None = None) -> list[str]:
    rows = ["| field | type | description |", "|---|---|---|"]
    for name, field in schema.get("properties", {}).items():
        description = " ".join(str(field.get("description", "")).split())
        if OPT_IN_KEY in field:
            description += f" *(opt-in: `{field[OPT_IN_KEY]}`; otherwise null)*"
        label = (labels or {}).get(name) or _type_label(field)
        rows.append(f"| `{name}` | {label} | {description} |")
    return rows


def render_events_doc(manifest: Mapping[str, Any] | None = None) -> str:
    """The text of ``docs/events.md``, generated from the manifest."""
    content = load_manifest() if manifest is None else manifest
    lines = [
        "# Events reference",
        "",
        f"<!-- Generated from event_manifest.json; do not edit. Run: {WRITE_COMMAND} -->",
        "",
        "Every message the SSE stream sends, with its OpenTelemetry mapping. "
        "The bus, the stream and the opt-ins are explained in "
        "[observability.md](observability.md). Each memory event type is declared once, "
        "in `recallstore.events.catalogue`; "
        "[contributing.md](contributing.md#adding-an-event-type) shows how to add one.",
        "",
        "| event | category | description |",
        "|---|---|---|",
    ]
    events = content["events"]
    for name in content["event_types"]:
        lines.append(f"| `{name}` | {events[name]['category']} | {events[name]['description']} |")
    lines += ["", "## Envelope", "", content["envelope"]["description"], ""]
    envelope_schema = events[content["event_types"][0]]["schema"]
    labels = {"type": "string (the event type)", "data": "object (per event type, below)"}
    lines += [*_field_rows(envelope_schema, labels), ""]
    for name in content["event_types"]:
        event = events[name]
        schema = event["schema"]
        lines += [f"## `{name}`", "", event["description"], ""]
        sse_id = event["sse"]["id"] or "none (Last-Event-ID is unchanged)"
        lines += [f"SSE: `event: {event['sse']['event']}`, `id:` {sse_id}.", ""]
        if event["category"] == "memory":
            data_name = schema["properties"]["data"]["$ref"].rsplit("/", 1)[-1]
            lines += [f"`data` ({data_name}):", "", *_field_rows(schema["$defs"][data_name]), ""]
        else:
            lines += [*_field_rows(schema), ""]
        otel = event["otel"]
        if otel is None:
            lines += ["OpenTelemetry: not exported (a property of the stream only).", ""]
            continue
        span = otel["span"]
        if span:
            operations = ", ".join(
                f"`{op}` → `{value}`" for op, value in span["operations"].items()
            )
            lines += [f"Span: named `{span['name']}`; operations: {operations}.", ""]
        else:
            lines += ["Span: none (a recall is not a store call).", ""]
        log = otel["log_record"]
        lines += [
            f"Log record: `event_name` = `{log['event_name']}`, body = {log['body']}, "
            f"in {log['context']}.",
            "",
            "Attributes (on the span, if any, and the log record):",
            "",
            "| attribute | from |",
            "|---|---|",
        ]
        lines += [f"| `{attr}` | `{source}` |" for attr, source in otel["attributes"].items()]
        lines.append("")
    common = content["otel"]["common_attributes"]
    lines += [
        "## Attributes on every span and log record",
        "",
        "| attribute | from |",
        "|---|---|",
        *(f"| `{attr}` | `{source}` |" for attr, source in common.items()),
        "",
        "## Attributes a span reads from its store call",
        "",
        "| attribute | holds |",
        "|---|---|",
        *(f"| `{attr}` | {what} |" for attr, what in content["otel"]["call_attributes"].items()),
        "",
    ]
    return "\n".join(lines)


def write_events_doc(path: str | Path, manifest: Mapping[str, Any] | None = None) -> None:
    """Write the events reference to ``path``."""
    Path(path).write_text(render_events_doc(manifest), encoding="utf-8")


def check_events_doc(path: str | Path, manifest: Mapping[str, Any] | None = None) -> list[str]:
    """A one-line difference report when ``path`` is out of date; empty when in sync."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return [f"{path}: does not exist; run {WRITE_COMMAND}"]
    if text == render_events_doc(manifest):
        return []
    return [f"{path}: differs from the manifest; run {WRITE_COMMAND}"]


def update_manifest(
    manifest: str | Path = MANIFEST_FILENAME, docs: str | Path = EVENTS_DOC_PATH, *, write: bool
) -> list[str]:
    """The one entry point both commands use: with ``write``, regenerate the manifest
    and the events reference (returns ``[]``); else the differences between those files
    and what the catalogue gives (``[]`` when both are up to date)."""
    if not write:
        return check_manifest(manifest) + check_events_doc(docs)
    write_manifest(manifest)
    Path(docs).parent.mkdir(parents=True, exist_ok=True)
    write_events_doc(docs)
    return []


def main(argv: Sequence[str] | None = None) -> int:
    """``--check``: exit 1 and list differences on drift. ``--write``: regenerate."""
    parser = argparse.ArgumentParser(
        prog="python -m recallstore.events.manifest",
        description="Check or regenerate event_manifest.json and docs/events.md.",
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="report drift; exit 1 if any")
    action.add_argument("--write", action="store_true", help="rewrite both files")
    parser.add_argument("--manifest", type=Path, default=Path(MANIFEST_FILENAME))
    parser.add_argument("--docs", type=Path, default=Path(EVENTS_DOC_PATH))
    args = parser.parse_args(argv)
    problems = update_manifest(args.manifest, args.docs, write=args.write)
    if args.write:
        print(f"wrote {args.manifest} and {args.docs}")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
