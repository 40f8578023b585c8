"""``recallstore capture``: a JSONL transcript stored as episodes, once each."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tests.cli.conftest import read_all, run_process

LINES: list[object] = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": "I moved to Lisbon.", "time": "2026-05-08T13:56:00Z"},
    ["assistant", "Welcome to Lisbon!", "2026-05-08T13:57:00+00:00"],
    {"role": "user", "content": [{"type": "text", "text": "I keep a cat named Miso."}]},
]


def write_jsonl(path: Path, items: Sequence[object]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n\n" for item in items), encoding="utf-8")
    return path


def test_capture_twice_adds_only_what_is_new(cli, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    transcript = write_jsonl(tmp_path / "trip-1.jsonl", LINES[:3])
    first = cli("capture", "--db", db, "--scope", "user=u1", transcript)
    assert first.code == 0, first.err
    assert first.out.strip() == (
        "captured 2 of 3 messages of 'trip-1' as 2 records in user=u1: 2 new"
    )
    write_jsonl(transcript, LINES)
    again = cli("capture", "--db", db, "--scope", "user=u1", transcript)
    assert again.out.strip().endswith("as 3 records in user=u1: 1 new")
    records = read_all(db)
    assert [r.content for r in records] == [
        "user: I moved to Lisbon.",
        "assistant: Welcome to Lisbon!",
        "user: I keep a cat named Miso.",
    ]
    assert all(r.provenance and r.provenance.conversation_id == "trip-1" for r in records)
    assert records[0].observed_at.isoformat() == "2026-05-08T13:56:00+00:00"


def test_options_from_the_command_line(cli, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    transcript = write_jsonl(tmp_path / "t.jsonl", LINES)
    result = cli(
        "capture",
        "--db",
        db,
        "--scope",
        "user=u1",
        "--conversation",
        "c-9",
        "--role",
        "system",
        "--max-chunk-chars",
        "10",
        transcript,
    )
    assert result.code == 0, result.err
    records = read_all(db)
    assert [r.content for r in records] == ["system: You are a", "system: travel", "system: agent."]
    assert all(r.provenance and r.provenance.conversation_id == "c-9" for r in records)


def test_a_bad_line_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    transcript = write_jsonl(tmp_path / "t.jsonl", [LINES[1], {"role": "wizard", "content": "x"}])
    result = run_process("capture", "--db", db, "--scope", "user=u1", transcript)
    assert result.code == 2
    assert f"{transcript} line 3: is not a role capture knows" in result.err
    transcript.write_text('{"role": "user", "content": "ok"}\nnot json\n', encoding="utf-8")
    result = run_process("capture", "--db", db, "--scope", "user=u1", transcript)
    assert result.code == 2
    assert "line 2: not JSON" in result.err
    assert read_all(db) == []


def test_stdin_needs_a_conversation_id(tmp_path: Path) -> None:
    result = run_process("capture", "--db", tmp_path / "m.db", "--scope", "user=u1", "-")
    assert result.code == 2
    assert "--conversation" in result.err


def test_a_line_json_cannot_read_is_named_not_a_traceback(tmp_path: Path) -> None:
    # Issue 36: a 4,400-digit integer or 3,000-deep arrays in tool arguments.
    db = tmp_path / "memory.db"
    call = '{"role": "assistant", "content": "x", "tool_calls": [{"function": {"name": "f", '
    for arguments, said in [
        ("9" * 4400, "line 2: holds an integer of more than 4300 digits"),
        ("[" * 3000 + "]" * 3000, "line 2: nested too deeply to read"),
    ]:
        transcript = tmp_path / "t.jsonl"
        line = call + '"arguments": {"n": ' + arguments + "}}}]}"
        transcript.write_text('{"role": "user", "content": "ok"}\n' + line + "\n", "utf-8")
        result = run_process("capture", "--db", db, "--scope", "user=u1", transcript)
        assert result.code == 2, result.err
        assert f"{transcript} {said}" in result.err
        assert "Traceback" not in result.err
    assert not db.exists() or read_all(db) == []
