"""What a second newcomer met (issue 36, item 8): whole-number options out of range, a
failed capture, ``consolidate --json`` and a partial scope, ``show`` of a consolidated
record, a database file this user cannot write."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
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
    (["list"], "--limit", "1001"),
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
    assert f"argument {option}: must be a whole number " in line
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


def test_show_prints_the_reason_and_the_plan_of_a_consolidated_record(cli, tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    _seed_ana(path)
    scope = ["--db", path, "--scope", "tenant=acme", "--scope", "user=ana"]
    plan = json.loads(cli("consolidate", *scope, "--apply", "--json").out)
    [merged] = [r for r in read_all(path) if r.is_invalidated]
    shown = cli("show", merged.id, "--db", path)
    assert shown.code == 0, shown.err
    rows = dict(line.split(":", 1) for line in shown.out.splitlines()[:6])
    assert rows["reason"].strip() == merged.invalid_reason
    assert rows["reason"].strip().startswith(f"consolidation {plan['id']}: duplicate of ")
    assert rows["plan"].strip() == (
        f"{plan['id']} (undo: recallstore consolidate --scope tenant=acme "
        f"--scope user=ana --revert {plan['id']})"
    )
    assert json.loads(cli("show", merged.id, "--db", path, "--json").out)["plan"] == plan["id"]
    # Reverted, the record is valid again: no reason, no plan.
    assert cli("consolidate", *scope, "--revert", plan["id"]).code == 0
    again = cli("show", merged.id, "--db", path)
    assert "reason:" not in again.out
    assert "plan:" not in again.out


def test_show_prints_the_reason_of_an_invalidation(cli, seeded: Seeded) -> None:
    shown = cli("show", seeded.tea.id, "--db", seeded.path)
    assert "\nreason:     switched to coffee\n" in shown.out
    assert "plan:" not in shown.out
    assert json.loads(cli("show", seeded.tea.id, "--db", seeded.path, "--json").out)["plan"] is None


def _as_another_user() -> list[str]:
    """Root writes any file whatever its mode: run the command as nobody then."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")  # util-linux
    if setpriv is None:
        pytest.skip("running as root without setpriv to become another user")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder in /tmp that another user can reach (pytest's own is root's alone)."""
    made = Path(tempfile.mkdtemp(prefix="recallstore-ro-", dir="/tmp"))
    try:
        yield made
    finally:
        made.chmod(0o700)
        shutil.rmtree(made)


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_as_another_user(), sys.executable, "-m", "recallstore", *(str(a) for a in args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("file_mode", "folder_mode", "says"),
    [
        (0o444, 0o777, "cannot write the database: the file is not writable by this process"),
        (0o666, 0o755, "cannot write the database: its folder {folder!r} is not writable"),
        (None, 0o755, "cannot create the database: the folder {folder!r} is not writable"),
    ],
)
def test_a_database_this_user_cannot_write_is_refused_as_a_write(
    seeded: Seeded, folder: Path, file_mode: int | None, folder_mode: int, says: str
) -> None:
    db = folder / "memory.db"
    if file_mode is not None:
        shutil.copyfile(seeded.path, db)
        db.chmod(file_mode)
    transcript = folder / "chat.jsonl"
    transcript.write_text('{"role": "user", "content": "hello"}\n', encoding="utf-8")
    transcript.chmod(0o644)
    folder.chmod(folder_mode)
    before = sorted((p.name, p.read_bytes()) for p in folder.iterdir())

    result = _run("capture", transcript, "--db", db, "--scope", "user=ana")
    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"recallstore: error: memory store {str(db)!r} is unavailable: ")
    assert says.format(folder=str(folder)) in line
    assert "cannot read" not in line
    if file_mode is not None:  # the file can still be looked at
        listed = _run("list", "--db", db)
        assert listed.returncode == 0, listed.stderr
    assert sorted((p.name, p.read_bytes()) for p in folder.iterdir()) == before
