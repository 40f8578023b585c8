"""``recallstore events tail``: the journal of a database, in the terminal."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import Seeded

from recallstore import MemoryRecord, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore


def test_tail_prints_every_write_of_the_seeded_file(cli, seeded: Seeded) -> None:
    result = cli("events", "tail", "--db", seeded.path)
    assert result.code == 0, result.err
    header, *lines = result.out.splitlines()
    assert header.split() == ["ID", "TIME", "TYPE", "WHAT", "N", "SCOPE", "RECORD", "IDS"]
    # Five writes (two of them supersedes) and an invalidation, in commit order.
    assert [line.split()[4] for line in lines] == [
        "write",
        "supersede",
        "supersede",
        "write",
        "invalidate",
        "write",
    ]
    ids = [int(line.split()[0]) for line in lines]
    assert ids == sorted(set(ids))
    assert seeded.tea.id in lines[4]


def test_tail_filters_by_scope_keeps_the_newest_and_prints_json(cli, seeded: Seeded) -> None:
    scope = seeded.coupon.scope
    pair = next(iter(scope.items()))
    result = cli("events", "tail", "--db", seeded.path, "--scope", f"{pair[0]}={pair[1]}", "--json")
    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    assert events
    assert all(event["scope"].get(pair[0]) == pair[1] for event in events)
    newest = cli("events", "tail", "--db", seeded.path, "--last", "1", "--json")
    [last] = [json.loads(line) for line in newest.out.splitlines()]
    assert last["data"]["record_ids"] == [seeded.coupon.id]


def test_tail_refuses_a_store_without_a_journal(cli) -> None:
    result = cli("events", "tail", "--db", "memory:")
    assert result.code == 2
    assert "keeps no event journal" in result.err
    assert cli("events", "tail", "--db", "memory:", "--last", "-1").code == 2


def test_ctrl_c_ends_a_follow_quietly(seeded: Seeded) -> None:
    # The real command in a process of its own, stopped by a real SIGINT once it printed
    # an event written after it started: 130, nothing on stderr. (--last 1000: that
    # event shows whether it lands before the tail first reads the journal or after.)
    command = [sys.executable, "-m", "recallstore", "events", "tail", "-f", "--last", "1000"]
    tail = subprocess.Popen(
        [*command, "--db", str(seeded.path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A background process of a non-interactive shell inherits SIGINT ignored: give
        # it Ctrl+C's default, as a terminal does.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert tail.stdout is not None
        assert tail.stdout.readline().split()[0] == "ID"
        [record] = asyncio.run(_write(seeded.path, "written while following"))
        for line in tail.stdout:
            if record.id in line:
                break
        tail.send_signal(signal.SIGINT)
        out, err = tail.communicate(timeout=60)
    finally:
        if tail.poll() is None:
            tail.kill()
            tail.wait(timeout=60)
    assert tail.returncode == 130
    assert err == ""
    assert out == ""


async def _write(path: Path, text: str) -> list[MemoryRecord]:
    async with SqliteMemoryStore(path) as store:
        return await store.write([MemoryWriteInput(scope={"user": "ana"}, content=text)])
