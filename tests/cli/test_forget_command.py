"""``recallstore forget``: dry run, confirmation on a real terminal, refusal without one."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.cli.conftest import read_all, run_process


def _alice_ids(path: Path) -> set[str]:
    return {record.id for record in read_all(path) if record.scope.get("user") == "alice"}


def test_dry_run_counts_every_record_of_the_scope_and_changes_nothing(cli, seeded) -> None:
    before = read_all(seeded.path)
    result = cli("forget", "--db", seeded.path, "--scope", "user=alice", "--dry-run")
    assert result.code == 0
    # Superseded, current and expired records alike: four of Alice's, by kind, with
    # the plans and journal entries the forget would touch (the lens's preview too).
    assert result.out.splitlines() == [
        f"4 records whose scope contains user=alice would be forgotten from {seeded.path}",
        "  4 records (3 fact, 1 episode)",
        "  0 consolidation plan(s) keep ids only",
        "  4 journal entries erased, 0 scrubbed of their text and conversation ids",
    ]
    assert read_all(seeded.path) == before


def test_yes_forgets_the_scope_and_nothing_else(cli, seeded) -> None:
    result = cli(
        "forget", "--db", seeded.path, "--scope", "tenant=acme", "--scope", "user=alice", "--yes"
    )
    assert result.code == 0
    assert result.out.strip() == "forgot 4 records whose scope contains tenant=acme, user=alice"
    assert [record.id for record in read_all(seeded.path)] == [seeded.tea.id]
    again = cli("forget", "--db", seeded.path, "--scope", "user=alice", "--yes")
    assert again.code == 0
    assert "nothing to forget" in again.out


@pytest.mark.slow
def test_without_a_terminal_it_refuses_unless_told_yes(seeded) -> None:
    result = run_process("forget", "--db", seeded.path, "--scope", "user=alice")
    assert result.code == 2
    assert "not a terminal" in result.err
    assert "--yes" in result.err
    assert len(_alice_ids(seeded.path)) == 4


def test_a_scope_is_required_and_must_be_pairs(cli, seeded) -> None:
    missing = cli("forget", "--db", seeded.path, "--yes")
    assert missing.code == 2
    assert "--scope" in missing.err
    bad = cli("forget", "--db", seeded.path, "--scope", "alice", "--yes")
    assert bad.code == 2
    assert "key=value" in bad.err
    assert len(_alice_ids(seeded.path)) == 4


def test_a_missing_database_is_not_created(cli, tmp_path: Path) -> None:
    result = cli("forget", "--db", tmp_path / "nope.db", "--scope", "user=alice", "--yes")
    assert result.code == 1
    assert not (tmp_path / "nope.db").exists()


def _on_a_terminal(path: Path, answer: bytes) -> tuple[int, str]:
    """Run the command with a pseudo-terminal as stdin/stdout/stderr; answer its question."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "recallstore", "forget", "--db", str(path), "--scope", "user=alice"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        close_fds=True,
    )
    os.close(follower)
    seen = b""
    answered = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the command exited and closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        if not answered and b"to forget it: " in seen:
            os.write(leader, answer)
            answered = True
        if process.poll() is not None and not ready:
            break
    os.close(leader)
    return process.wait(timeout=30), seen.decode(errors="replace")


@pytest.mark.slow
def test_on_a_terminal_it_names_what_goes_and_forgets_only_when_the_scope_is_typed(
    seeded,
) -> None:
    for answer in (b"n\n", b"yes\n", b"user=alic\n"):
        code, shown = _on_a_terminal(seeded.path, answer)
        assert code == 1, shown
        assert "Forgetting user=alice from" in shown
        assert "4 records (3 fact, 1 episode)" in shown
        assert "journal entries erased" in shown
        assert "Type the scope (user=alice) to forget it:" in shown
        assert "nothing was forgotten" in shown
        assert len(_alice_ids(seeded.path)) == 4
    code, shown = _on_a_terminal(seeded.path, b"user = alice\n")
    assert code == 0, shown
    assert "forgot 4 records" in shown
    assert _alice_ids(seeded.path) == set()


def test_dry_run_names_the_plans_a_forget_would_redact(cli, tmp_path: Path) -> None:
    import asyncio

    from recallstore.backends.sqlite import SqliteMemoryStore
    from recallstore.consolidation import apply_plan, consolidate
    from recallstore.records import MemoryWriteInput

    path = tmp_path / "plans.db"
    scope = {"user": "carol"}

    async def seed() -> str:
        async with SqliteMemoryStore(path) as store:
            await store.write(
                [
                    MemoryWriteInput(scope=scope, content="Likes rye bread.", kind="preference"),
                    MemoryWriteInput(scope=scope, content="likes rye bread", kind="preference"),
                ]
            )
            plan = await consolidate(store, scope)
            assert await apply_plan(store, plan) is not None
            return plan.id

    plan_id = asyncio.run(seed())
    result = cli("forget", "--db", path, "--scope", "user=carol", "--dry-run")
    assert result.code == 0
    assert f"  1 consolidation plan(s) keep ids only: {plan_id}" in result.out.splitlines()
    assert "  2 records (2 preference)" in result.out.splitlines()
    forgot = cli("forget", "--db", path, "--scope", "user=carol", "--yes")
    assert forgot.out.strip() == "forgot 2 records whose scope contains user=carol"
