"""``show`` prints the consolidation plans that changed a record, with the reason the
proposer gave, and the day a thing was said beside the day it was saved, in ``show``,
its chain and the plan diff ``consolidate`` prints (issue 41), on a real SQLite file."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

from tests.cli.conftest import read_all

from recallstore import MemoryRecord, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

ANA = {"tenant": "acme", "user": "ana"}
SCOPE = ["--scope", "tenant=acme", "--scope", "user=ana"]


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _seed(path: Path) -> tuple[MemoryRecord, MemoryRecord]:
    """The same thing said on the 2nd and on the 3rd, both captured on the 20th."""

    async def write() -> tuple[MemoryRecord, MemoryRecord]:
        async with SqliteMemoryStore(path, clock=lambda: _at("2024-11-20T10:00:00")) as store:
            first, again = await store.write(
                [
                    MemoryWriteInput(
                        scope=ANA, content="Lives in Lisbon.", observed_at=_at("2024-11-02T09:00")
                    ),
                    MemoryWriteInput(
                        scope=ANA, content="lives in lisbon", observed_at=_at("2024-11-03T09:00")
                    ),
                ]
            )
            return first, again

    return asyncio.run(write())


def _applied(cli, path: Path) -> tuple[str, str]:
    """Apply the consolidation of ANA; its plan id and the diff it printed."""
    applied = cli("consolidate", "--db", path, *SCOPE, "--apply")
    assert applied.code == 0, applied.err
    plan_id = applied.out.rstrip().rsplit("--revert ", 1)[1]
    return plan_id, applied.out


def test_the_plan_diff_shows_the_day_said_and_the_save_day(cli, tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    first, again = _seed(path)
    dry = cli("consolidate", "--db", path, *SCOPE)
    assert dry.code == 0, dry.err
    lines = dry.out.splitlines()
    assert f"  - [{again.id} fact 2024-11-03, saved 2024-11-20] lives in lisbon" in lines
    assert (
        f"  = [{first.id} fact 2024-11-02, saved 2024-11-20] Lives in Lisbon.  "
        "(duplicate of: the same text, saved again)"
    ) in lines


def test_show_prints_the_plan_and_the_proposers_reason_on_both_records(cli, tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    first, again = _seed(path)
    plan_id, _ = _applied(cli, path)
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    gone = cli("show", again.id, "--db", path)
    assert gone.code == 0, gone.err
    section = gone.out.split("\nconsolidations (newest first):\n")[1].split("\n\n")[0]
    [head, change, reason] = section.splitlines()
    assert head.split()[:2] == [plan_id, "applied"]
    assert "reverted" not in head
    assert change == f"    this record is a duplicate of {first.id}"
    assert reason == "    because: the same text, saved again"

    kept = cli("show", first.id, "--db", path)
    section = kept.out.split("\nconsolidations (newest first):\n")[1].split("\n\n")[0]
    assert section.splitlines()[1:] == [
        f"    {again.id} is a duplicate of this record",
        "    because: the same text, saved again",
    ]
    # The kept record is valid: no reason or plan row of its own.
    assert "\nreason:" not in kept.out
    assert "\nplan:" not in kept.out

    shown = json.loads(cli("show", again.id, "--db", path, "--json").out)
    assert shown["plan"] == plan_id
    [item] = shown["consolidations"]
    assert item["plan"] == plan_id
    assert item["reverted_at"] is None
    assert (item["action"], item["record_id"], item["target_id"]) == (
        "duplicate",
        again.id,
        first.id,
    )
    assert item["reason"] == "the same text, saved again"
    # Looking at the plans left the files as they were (reads leave no trace).
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files


def test_show_keeps_the_history_of_a_reverted_plan(cli, tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    _, again = _seed(path)
    plan_id, _ = _applied(cli, path)
    assert cli("consolidate", "--db", path, *SCOPE, "--revert", plan_id).code == 0
    shown = cli("show", again.id, "--db", path)
    assert "\nstatus:     valid\n" in shown.out
    head = shown.out.split("\nconsolidations (newest first):\n")[1].splitlines()[0]
    assert head.startswith(f"  {plan_id}  applied ")
    assert ", reverted " in head
    [item] = json.loads(cli("show", again.id, "--db", path, "--json").out)["consolidations"]
    assert item["reverted_at"] is not None
    assert json.loads(cli("show", again.id, "--db", path, "--json").out)["plan"] is None


def test_show_prints_the_day_said_and_the_chain_with_its_save_day(cli, tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    first, again = _seed(path)
    _applied(cli, path)
    shown = cli("show", again.id, "--db", path)
    assert "\nsaid:       2024-11-03T09:00:00.000000Z\n" in shown.out
    assert "\ncreated:    2024-11-20T10:00:00" in shown.out
    chain = shown.out.split("chain (oldest first):\n")[1].splitlines()
    rows = {line.replace("*", " ").split()[0]: line.replace("*", " ").split() for line in chain}
    assert rows[first.id][1:5] == ["valid", "2024-11-02", "09:00:00", "2024-11-20"]
    assert rows[again.id][1:5] == ["superseded", "2024-11-03", "09:00:00", "2024-11-20"]


def test_a_store_without_plans_shows_no_consolidations(cli, seeded) -> None:
    shown = cli("show", seeded.green.id, "--db", seeded.path)
    assert shown.code == 0, shown.err
    assert "consolidations" not in shown.out
    assert (
        json.loads(cli("show", seeded.green.id, "--db", seeded.path, "--json").out)[
            "consolidations"
        ]
        == []
    )
    # Nothing was written by looking.
    assert len(read_all(seeded.path)) == 5
