"""`recallstore import` on lines a hostile or broken exporter wrote: one error line, exit 2.

Run as a real subprocess, so the exit code and stderr are the real ones; nothing is
written (the target's folder is not even created).
"""

from __future__ import annotations

import json

import pytest

HUGE_INTEGER = "9" * 4301

# What replaces a record line's closing brace, and the problem the error line names.
HOSTILE_PAYLOADS = {
    "huge-integer": (f', "payload": {HUGE_INTEGER}}}', "a number has 4301 digits"),
    "deep-arrays": (
        ', "payload": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "it nests deeper than 256 levels",
    ),
    "nan": (', "payload": NaN}', "NaN is not a JSON value"),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(HOSTILE_PAYLOADS))
def test_an_unreadable_json_line_is_file_line_and_exit_2(process, seeded, tmp_path, kind) -> None:
    ending, problem = HOSTILE_PAYLOADS[kind]
    line = seeded.blue.model_dump_json()[:-1] + ending
    expected = f"not valid JSON: {problem}"
    source = tmp_path / "hostile.jsonl"
    source.write_text(seeded.purple.model_dump_json() + "\n" + line + "\n", encoding="utf-8")
    target = tmp_path / "new" / "memory.db"

    result = process("import", source, "--db", target)

    assert result.code == 2, result
    assert "Traceback" not in result.err
    [message] = result.err.strip().splitlines()
    assert message.startswith(f"recallstore: error: {source}:2: {expected}")
    assert len(message) < 400  # the offending line is not echoed back
    assert not target.parent.exists()


@pytest.mark.parametrize(
    ("field", "bad_id"),
    [
        ("id", "tenant/acme"),
        ("id", ".."),
        ("id", "a b"),
        ("id", "caf\u00e9"),
        ("id", "a%2Fb"),
        ("superseded_by", "../other"),
    ],
)
@pytest.mark.slow
def test_ids_a_store_would_not_generate_are_refused_on_import(
    process, seeded, tmp_path, field, bad_id
) -> None:
    record = json.loads(seeded.blue.model_dump_json())
    record[field] = bad_id
    source = tmp_path / "ids.jsonl"
    source.write_text(json.dumps(record) + "\n", encoding="utf-8")
    target = tmp_path / "new" / "memory.db"

    result = process("import", source, "--db", target)

    assert result.code == 2, result
    [message] = result.err.strip().splitlines()
    assert message.startswith(
        f"recallstore: error: {source}:1: {field}: {bad_id!r} is not a record id"
    )
    assert not target.parent.exists()
