"""Fixtures for the CLI tests: a seeded SQLite file and ways to run the real command."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from recallstore import MemoryRecord, MemoryTarget, MemoryWriteInput, Provenance
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.cli import main


@dataclass(frozen=True)
class Seeded:
    """A SQLite file holding a supersede chain, an invalidated and an expired record."""

    path: Path
    blue: MemoryRecord  # superseded by green
    green: MemoryRecord  # superseded by purple
    purple: MemoryRecord  # current
    tea: MemoryRecord  # invalidated with a reason, another user
    coupon: MemoryRecord  # expired, carries payload/target/supports/provenance


async def _seed(path: Path) -> Seeded:
    alice = {"tenant": "acme", "user": "alice"}
    async with SqliteMemoryStore(path) as store:
        [blue] = await store.write(
            [MemoryWriteInput(scope=alice, content="Favourite colour is blue", tags=["colour"])]
        )
        [green] = await store.write(
            [MemoryWriteInput(scope=alice, content="Favourite colour is green", supersedes=blue.id)]
        )
        [purple] = await store.write(
            [
                MemoryWriteInput(
                    scope=alice, content="Favourite colour is purple", supersedes=green.id
                )
            ]
        )
        [tea] = await store.write(
            [
                MemoryWriteInput(
                    scope={"tenant": "acme", "user": "bob"},
                    kind="preference",
                    content="Bob drinks tea every morning",
                )
            ]
        )
        await store.invalidate(tea.id, "switched to coffee")
        [coupon] = await store.write(
            [
                MemoryWriteInput(
                    scope=alice,
                    kind="episode",
                    content="Alice used the spring coupon",
                    tags=["billing", "coupon"],
                    provenance=Provenance(conversation_id="c-1", run_id="r-1", author="agent"),
                    expires_at=datetime.now(UTC) - timedelta(days=1),
                    target=MemoryTarget(section="billing", key="coupon"),
                    payload={"code": "SPRING", "amount": [1, 2.5, None]},
                    supports=(Provenance(conversation_id="c-0"),),
                )
            ]
        )
        found = [await store.get(r.id) for r in (blue, green, purple, tea, coupon)]
    refreshed = [r for r in found if r is not None]
    assert len(refreshed) == len(found)
    blue, green, purple, tea, coupon = refreshed
    return Seeded(path, blue, green, purple, tea, coupon)


@pytest.fixture
def seeded(tmp_path: Path) -> Seeded:
    """A fresh seeded database file."""
    return asyncio.run(_seed(tmp_path / "memory.db"))


@dataclass(frozen=True)
class Result:
    """What a command run produced."""

    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run ``recallstore ARGS`` in-process; returns a Result."""

    def run(*args: str | os.PathLike[str]) -> Result:
        capsys.readouterr()
        code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def run_process(
    *args: str | os.PathLike[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> Result:
    """Run ``python -m recallstore ARGS`` in a subprocess (proves exit codes and stderr)."""
    completed = subprocess.run(
        [sys.executable, "-m", "recallstore", *(str(arg) for arg in args)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
    )
    return Result(completed.returncode, completed.stdout, completed.stderr)


def read_all(path: Path) -> list[MemoryRecord]:
    """Every record in the file, oldest first, read straight through the backend."""

    async def go() -> list[MemoryRecord]:
        from recallstore.jsonl import iter_records

        async with SqliteMemoryStore(path) as store:
            return [record async for record in iter_records(store)]

    return asyncio.run(go())


def get_record(path: Path, record_id: str) -> MemoryRecord | None:
    """One record read straight through the backend."""

    async def go() -> MemoryRecord | None:
        async with SqliteMemoryStore(path) as store:
            return await store.get(record_id)

    return asyncio.run(go())


@pytest.fixture
def process():
    """``run_process`` as a fixture: the command in a subprocess."""
    return run_process


@pytest.fixture
def records_in():
    """``read_all`` as a fixture: every record of a file, oldest first."""
    return read_all


@pytest.fixture
def record_in():
    """``get_record`` as a fixture: one record of a file."""
    return get_record
