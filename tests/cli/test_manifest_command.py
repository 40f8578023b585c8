"""`recallstore events manifest --write/--check` on real files."""

from __future__ import annotations

import json

import pytest

from recallstore.events.manifest import render_events_doc, render_manifest


def test_write_then_check_then_detect_drift(cli, tmp_path) -> None:
    manifest, docs = tmp_path / "event_manifest.json", tmp_path / "docs" / "events.md"
    paths = ("--manifest", manifest, "--docs", docs)

    written = cli("events", "manifest", "--write", *paths)
    assert written.code == 0
    assert manifest.read_text(encoding="utf-8") == render_manifest()
    assert docs.read_text(encoding="utf-8") == render_events_doc()

    assert cli("events", "manifest", "--check", *paths).code == 0

    content = json.loads(manifest.read_text(encoding="utf-8"))
    dropped = sorted(content["events"])[0]
    del content["events"][dropped]
    manifest.write_text(json.dumps(content, indent=2), encoding="utf-8")
    drifted = cli("events", "manifest", "--check", *paths)
    assert drifted.code == 1
    assert f"events.{dropped}: missing from the file" in drifted.err
    assert (
        drifted.err.strip()
        .splitlines()[-1]
        .startswith("recallstore: error: the event manifest is out of date")
    )


@pytest.mark.slow
def test_the_repository_manifest_is_current(process) -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    result = process("events", "manifest", "--check", cwd=root)
    assert result.code == 0, result.err
