"""What a second newcomer met (issue 36, item 8): whole-number options out of range, a
failed capture, ``consolidate --json`` and a partial scope, ``show`` of a consolidated
record, a database file this user cannot write."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.cli.conftest import Seeded, read_all

from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

OUT_OF_RANGE = [
    (["list"], "--limit", "0"),
    (["list"], "--limit", "-1"),
    (["search", "tea"], "--limit", "0"),
    (["import", "x.jsonl"], "--batch-size", "0"),
    (["reembed", "--embedder", "default"], "--batch-size", "0"),
    (["consolidate", "--scope", "user=alice"], "--cap", "0"),
    (["capture", "x.jsonl", "--scope", "user=alice"], "--max-chunk-chars", "0"),
    (["events", "tail"], "--last", "-1"),
    (["list"], "--limit", "many"),
]


@pytest.mark.parametrize(("command", "option", "value"), OUT_OF_RANGE)
def test_a_whole_number_option_out_of_range_is_one_line_and_changes_nothing(
    cli, seeded: Seeded, command: list[str], option: str, value: str
) -> None:
    before = read_all(seeded.path)
    result = cli(*command, "--db", seeded.path, option, value)
    assert result.code == 2
    assert result.out == ""
    [line] = result.err.splitlines()
    assert f"argument {option}: must be a whole number >= " in line
    assert repr(value) in line
    assert read_all(seeded.path) == before


@pytest.mark.parametrize(
    "line",
    [
        '{"role": "robot", "content": "x"}',  # no role capture knows
        '{"role": "user", "content": {"deep": "no text"}}',  # no text in it
        "[1, 2, 3]",  # an array that is no (role, text) pair
    ],
)
def test_a_failed_capture_creates_no_database_and_no_folder(cli, tmp_path: Path, line: str) -> None:
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text('{"role": "user", "content": "fine"}\n' + line + "\n", encoding="utf-8")
    target = tmp_path / "new-folder" / "memory.db"
    result = cli("capture", transcript, "--db", target, "--scope", "user=ana")
    assert result.code == 2, result.err
    assert result.err.startswith(f"recallstore: error: {transcript} line 2: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat.jsonl"]


def _seed_ana(path: Path) -> None:
    async def write() -> None:
        async with SqliteMemoryStore(path) as store:
            for text in ("Lives in Lisbon.", "lives in lisbon", "I love jazz"):
                await store.write([MemoryWriteInput(scope=ANA, content=text)])

    asyncio.run(write())


ANA = {"tenant": "acme", "user": "ana"}


def test_consolidate_json_is_one_json_document_for_a_dry_run_apply_and_revert(
    cli, tmp_path: Path
) -> None:
    path = tmp_path / "memory.db"
    _seed_ana(path)
    scope = ["--db", path, "--scope", "tenant=acme", "--scope", "user=ana", "--json"]
    dry = cli("consolidate", *scope)
    assert dry.code == 0, dry.err
    assert len(json.loads(dry.out)["operations"]) == 1  # the whole of stdout parses
    assert dry.err.strip() == "dry run: nothing changed (add --apply to apply this plan)"

    applied = cli("consolidate", *scope, "--apply")
    assert applied.code == 0, applied.err
    plan = json.loads(applied.out)
    assert applied.err.strip() == f"applied {plan['id']}; undo with --revert {plan['id']}"

    reverted = cli("consolidate", *scope, "--revert", plan["id"])
    assert reverted.code == 0, reverted.err
    assert json.loads(reverted.out)["id"] == plan["id"]
    assert "1 record(s) restored" in reverted.err


def test_consolidate_on_part_of_the_scope_says_which_scopes_hold_the_records(
    cli, tmp_path: Path
) -> None:
    path = tmp_path / "memory.db"
    _seed_ana(path)
    result = cli("consolidate", "--db", path, "--scope", "tenant=acme")
    assert result.code == 0, result.err
    assert "0 change(s)" in result.out
    assert (
        "no valid record has exactly the scope tenant=acme: consolidate works on one exact "
        "scope, and the 3 record(s) within it lie in 1 narrower scope(s): "
        "tenant=acme, user=ana (3)"
    ) in result.out
    assert "e.g. --scope tenant=acme --scope user=ana" in result.out

    elsewhere = cli("consolidate", "--db", path, "--scope", "tenant=other", "--json")
    assert json.loads(elsewhere.out)["operations"] == []
    assert "no valid record has exactly the scope tenant=other\n" in elsewhere.err
    # The exact scope with nothing to merge needs no such note.
    exact = cli("consolidate", "--db", path, "--scope", "tenant=acme", "--scope", "user=ana")
    assert "no valid record" not in exact.out
