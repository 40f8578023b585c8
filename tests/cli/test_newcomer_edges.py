"""What a first-time user of the command meets: ``--version``, ``--scope`` in the form
``list`` prints it, an empty scope value, an empty or malformed file given as ``--db``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from tests.cli.conftest import Seeded, run_process

from recallstore import __version__


def test_version_prints_the_version() -> None:
    result = run_process("--version")
    assert result.code == 0, result.err
    assert result.out.strip() == f"recallstore {__version__}"


@pytest.mark.parametrize("text", ["user=alice,tenant=acme", "tenant=acme, user=alice"])
def test_scope_accepts_the_pairs_list_prints(cli, seeded: Seeded, text: str) -> None:
    result = cli("list", "--db", seeded.path, "--scope", text)
    assert result.code == 0, result.err
    (row,) = result.out.splitlines()[1:]
    assert row.split()[0] == seeded.purple.id
    # The scope column of that row, given back as --scope, finds the same row.
    scope_text = row.split("  ")[-2].strip()
    assert scope_text == "tenant=acme, user=alice"
    again = cli("list", "--db", seeded.path, "--scope", scope_text)
    assert again.out == result.out


@pytest.mark.parametrize("bad", ["user=", "user= ", "user=alice,tenant="])
def test_an_empty_scope_value_is_refused(cli, seeded: Seeded, bad: str) -> None:
    result = cli("list", "--db", seeded.path, "--scope", bad)
    assert result.code == 2
    assert "needs a non-empty value" in result.err
    assert result.out == ""


@pytest.mark.parametrize(
    "command",
    [["list"], ["search", "tea"], ["show", "01m8sz7b9b1303a3xvx572azjj"], ["events", "tail"]],
)
def test_a_read_command_leaves_an_empty_file_empty(tmp_path: Path, command: list[str]) -> None:
    empty = tmp_path / "memory.db"
    empty.touch()
    result = run_process(*command, "--db", empty)
    assert result.code == 1
    assert "empty file (0 bytes), not a memory database" in result.err
    assert empty.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]


def _truncated_database(seeded: Seeded, path: Path) -> bytes:
    """A real memory database cut short: SQLite reads the header, then finds it malformed."""
    data = Path(seeded.path).read_bytes()[:40_000]
    path.write_bytes(data)
    return data


def _another_applications_wal_file(path: Path) -> bytes:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    conn.close()
    return path.read_bytes()


@pytest.mark.parametrize("command", [["list"], ["search", "tea"], ["events", "tail"]])
@pytest.mark.parametrize(
    ("make", "problem"),
    [("truncated", "malformed"), ("foreign", "another application's tables")],
)
@pytest.mark.slow
def test_a_refused_file_leaves_no_wal_or_shm_behind(
    seeded: Seeded, tmp_path: Path, command: list[str], make: str, problem: str
) -> None:
    folder = tmp_path / "given"
    folder.mkdir()
    refused = folder / "memory.db"
    if make == "truncated":
        before = _truncated_database(seeded, refused)
    else:
        before = _another_applications_wal_file(refused)
    assert sorted(p.name for p in folder.iterdir()) == ["memory.db"]
    result = run_process(*command, "--db", refused)
    assert result.code == 1
    assert problem in result.err
    assert sorted(p.name for p in folder.iterdir()) == ["memory.db"]
    assert refused.read_bytes() == before


def test_sidecars_that_were_there_before_are_left_alone(seeded: Seeded, tmp_path: Path) -> None:
    refused = tmp_path / "memory.db"
    before = _truncated_database(seeded, refused)
    theirs = [tmp_path / "memory.db-wal", tmp_path / "memory.db-shm"]
    for sidecar in theirs:
        sidecar.write_bytes(b"")
    result = run_process("list", "--db", refused)
    assert result.code == 1
    assert "malformed" in result.err
    assert all(sidecar.exists() for sidecar in theirs)
    assert refused.read_bytes() == before
