"""``recallstore consolidate``: a dry run, --apply, --list and --revert on a real file."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import read_all

from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.store import RecordChange

ANA = {"tenant": "acme", "user": "ana"}


def _seed(path: Path) -> None:
    async def write() -> None:
        async with SqliteMemoryStore(path) as store:
            for text in ("Lives in Lisbon.", "lives in lisbon", "I love jazz", "I hate jazz"):
                await store.write([MemoryWriteInput(scope=ANA, content=text)])
            await store.write([MemoryWriteInput(scope={"user": "ana"}, content="Lives in Lisbon.")])

    asyncio.run(write())


def test_dry_run_apply_list_and_revert(cli, tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    _seed(path)
    before = read_all(path)
    scope = ["--scope", "tenant=acme", "--scope", "user=ana"]

    dry = cli("consolidate", "--db", path, *scope)
    assert dry.code == 0, dry.err
    assert "1 change(s)" in dry.out
    assert "- [" in dry.out
    assert "lives in lisbon" in dry.out
    assert dry.out.rstrip().endswith("dry run: nothing changed (add --apply to apply this plan)")
    assert read_all(path) == before

    applied = cli("consolidate", "--db", path, *scope, "--apply", "--slots")
    assert applied.code == 0, applied.err
    plan_id = applied.out.rstrip().rsplit("--revert ", 1)[1]
    assert "2 change(s)" in applied.out
    valid = [r.content for r in read_all(path) if not r.is_invalidated and r.scope == ANA]
    assert sorted(valid) == ["I hate jazz", "Lives in Lisbon."]
    assert len(read_all(path)) == len(before)

    listed = cli("consolidate", "--db", path, *scope, "--list")
    assert listed.out.strip() == f"{plan_id} applied 2 change(s)"

    again = cli("consolidate", "--db", path, *scope, "--json")
    assert json.loads(again.out.split("\ndry run")[0])["operations"] == []

    reverted = cli("consolidate", "--db", path, *scope, "--revert", plan_id)
    assert reverted.code == 0, reverted.err
    assert f"reverted {plan_id}: 2 record(s) restored" in reverted.out
    assert read_all(path) == before

    twice = cli("consolidate", "--db", path, *scope, "--revert", plan_id)
    assert twice.code != 0
    assert "reverted already" in twice.err


def test_a_scope_is_required(cli, tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    _seed(path)
    result = cli("consolidate", "--db", path)
    assert result.code != 0
    assert "--scope" in result.err


def _revise_a_note(path: Path) -> None:
    """A revision kept through the store's public revise, whose body is no plan."""

    async def revise() -> None:
        async with SqliteMemoryStore(path) as store:
            (note,) = await store.write([MemoryWriteInput(scope=ANA, content="a note")])
            await store.revise("my-revision", ANA, [RecordChange(note.id, "mine")], "free text")

    asyncio.run(revise())


def test_list_names_a_revision_that_is_no_plan_and_lists_every_plan_without_scope(
    cli, tmp_path: Path
) -> None:
    path = tmp_path / "memory.db"
    _seed(path)
    _revise_a_note(path)
    scope = ["--scope", "tenant=acme", "--scope", "user=ana"]
    applied = cli("consolidate", "--db", path, *scope, "--apply")
    plan_id = applied.out.rstrip().rsplit("--revert ", 1)[1]
    listed = cli("consolidate", "--db", path, *scope, "--list")
    assert listed.code == 0, listed.err
    assert listed.out.splitlines() == [
        f"{plan_id} applied 1 change(s)",
        "my-revision skipped: not a consolidation plan (kept through revise by another caller)",
    ]
    everything = cli("consolidate", "--db", path, "--list")
    assert everything.code == 0, everything.err
    assert everything.out == listed.out
    refused = cli("consolidate", "--db", path, "--revert", "my-revision")
    assert refused.code != 0
    assert "not a consolidation plan" in refused.err
    assert "Traceback" not in refused.err


def test_a_revert_argument_that_is_not_utf8_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    _seed(path)
    completed = subprocess.run(
        [
            os.fsencode(sys.executable),
            b"-m",
            b"recallstore",
            b"consolidate",
            b"--db",
            os.fsencode(path),
            b"--revert",
            b"plan_\xff\xfe",
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    err = completed.stderr.decode("utf-8", "replace")
    assert completed.returncode != 0
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert "revision_id" in err
    assert "lone surrogate" in err
