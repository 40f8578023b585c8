"""event_manifest.json and docs/events.md are generated; drift fails here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from pydantic import Field, create_model

from recallstore.events import EVENT_TYPES, MemoryEvent, MemoryWriteData, MemoryWriteEvent
from recallstore.events.catalogue import EVENT_MODELS
from recallstore.events.manifest import (
    WRITE_COMMAND,
    build_manifest,
    check_events_doc,
    check_manifest,
    main,
    manifest_event_types,
    render_manifest,
    write_manifest,
)

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "event_manifest.json"
EVENTS_DOC = ROOT / "docs" / "events.md"


def test_committed_manifest_matches_the_models() -> None:
    assert check_manifest(MANIFEST) == [], f"event_manifest.json drifted; run {WRITE_COMMAND}"


def test_committed_events_doc_matches_the_manifest() -> None:
    assert check_events_doc(EVENTS_DOC) == [], f"docs/events.md drifted; run {WRITE_COMMAND}"


def test_adding_a_field_to_a_copy_of_a_model_is_reported_as_drift() -> None:
    widened_data = create_model(
        "MemoryWriteData",
        __base__=MemoryWriteData,
        tenant_secret=(str | None, Field(default=None, description="a new field")),
    )
    widened_event = create_model(
        "MemoryWriteEvent", __base__=MemoryWriteEvent, data=(widened_data, ...)
    )
    models: dict[str, type[MemoryEvent]] = {**EVENT_MODELS, "agent.memory.write": widened_event}
    differences = check_manifest(MANIFEST, build_manifest(models))
    assert differences
    assert any("MemoryWriteData.properties.tenant_secret" in line for line in differences)
    assert check_manifest(MANIFEST) == []  # the real models are untouched


def test_check_reports_a_missing_or_reformatted_file(tmp_path: Path) -> None:
    assert "does not exist" in check_manifest(tmp_path / "absent.json")[0]
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(build_manifest()), encoding="utf-8")
    assert "formatting" in check_manifest(compact)[0]
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    assert "not valid JSON" in check_manifest(broken)[0]


def test_render_is_deterministic_sorted_and_newline_terminated() -> None:
    text = render_manifest()
    assert text == render_manifest()
    assert text.endswith("}\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_manifest_covers_every_type_with_schema_sse_and_otel() -> None:
    manifest = build_manifest()
    assert tuple(manifest["event_types"]) == EVENT_TYPES == manifest_event_types()
    for name in EVENT_TYPES:
        entry = manifest["events"][name]
        assert entry["description"]
        assert entry["schema"]["type"] == "object"
        assert entry["sse"]["event"] == name
    write = manifest["events"]["agent.memory.write"]
    assert write["otel"]["span"]["operations"]["delete"] == "delete_memory"
    assert write["opt_in_fields"] == {
        "data.contents": "include_content",
        "data.reason": "include_content",
    }
    search = manifest["events"]["agent.memory.search"]
    # Query text is no event attribute: a span reads it from the call, on the user's opt-in.
    assert "gen_ai.memory.query.text" not in search["otel"]["attributes"]
    opt_in = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    assert opt_in in manifest["otel"]["call_attributes"]["gen_ai.memory.query.text"]
    assert manifest["events"]["gap"]["otel"] is None
    assert manifest["events"]["gap"]["sse"]["id"] is None


def test_cli_check_and_write(tmp_path: Path, capsys: object) -> None:
    manifest, doc = tmp_path / "event_manifest.json", tmp_path / "docs" / "events.md"
    assert main(["--check", "--manifest", str(manifest), "--docs", str(doc)]) == 1
    assert main(["--write", "--manifest", str(manifest), "--docs", str(doc)]) == 0
    assert main(["--check", "--manifest", str(manifest), "--docs", str(doc)]) == 0
    assert manifest.read_text(encoding="utf-8") == MANIFEST.read_text(encoding="utf-8")
    assert doc.read_text(encoding="utf-8") == EVENTS_DOC.read_text(encoding="utf-8")


@pytest.mark.slow
def test_module_command_runs_from_the_repo_root(tmp_path: Path) -> None:
    shutil.copy(MANIFEST, tmp_path / "event_manifest.json")
    (tmp_path / "docs").mkdir()
    shutil.copy(EVENTS_DOC, tmp_path / "docs" / "events.md")
    result = subprocess.run(
        [sys.executable, "-m", "recallstore.events.manifest", "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "RuntimeWarning" not in result.stderr
    write_manifest(tmp_path / "event_manifest.json", {"stale": True})
    result = subprocess.run(
        [sys.executable, "-m", "recallstore.events.manifest", "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "missing from the file" in result.stderr


def test_wheel_ships_the_manifest_inside_the_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    force_include = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force_include["event_manifest.json"] == "recallstore/event_manifest.json"
