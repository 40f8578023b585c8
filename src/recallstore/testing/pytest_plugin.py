"""The recallstore pytest plugin: byte-stable, memory-bearing prompts, pinned as text files.

Installing ``recallstore[testing]`` registers it (entry point ``recallstore``); nothing
to import. Fixtures:

* ``memory_clock`` — a :class:`FrozenClock` standing at :data:`FROZEN_TIME`;
* ``memory_store`` — an open :class:`~recallstore.InMemoryMemoryStore`;
* ``sqlite_memory_store`` — an open :class:`~recallstore.SqliteMemoryStore` on a file
  in the test's ``tmp_path``;
* ``prompt_snapshot`` — syrupy's ``snapshot``, writing one readable file per assertion
  under ``snapshots/`` (see :mod:`recallstore.testing.prompt_snapshot`).

Both stores read ``memory_clock`` and take ids from their own ``deterministic_ids()``,
so the same writes give the same records — ids, timestamps and the dates the recall
block prints — on every run, in every time zone, on either backend. See docs/testing.md.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from syrupy.assertion import SnapshotAssertion

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.store import deterministic_ids
from recallstore.testing.prompt_snapshot import (
    DEFAULT_SNAPSHOT_DIR,
    PromptSnapshotExtension,
    prompt_snapshot_extension,
)

__all__ = [
    "FROZEN_TIME",
    "FrozenClock",
    "memory_clock",
    "memory_store",
    "prompt_snapshot",
    "sqlite_memory_store",
]

FROZEN_TIME = datetime(2026, 1, 15, 9, 30, tzinfo=UTC)
"""Where ``memory_clock`` stands until a test moves it."""

_SNAPSHOT_DIR_INI = "recallstore_snapshot_dir"


class FrozenClock:
    """A clock that stands still until moved; pass it to a store as ``clock=``.

    Stores still stamp successive writes a microsecond apart, so recency order holds.
    """

    def __init__(self, start: datetime = FROZEN_TIME) -> None:
        self._now = _utc(start)

    def __call__(self) -> datetime:
        """The frozen moment, in UTC."""
        return self._now

    def advance(self, delta: timedelta) -> None:
        """Move the clock by ``delta`` (e.g. ``timedelta(days=1)`` for "the next day")."""
        if not isinstance(delta, timedelta):
            raise TypeError(f"advance takes a timedelta, got {delta!r}")
        self._now += delta

    def set(self, moment: datetime) -> None:
        """Move the clock to ``moment`` (timezone-aware)."""
        self._now = _utc(moment)


def _utc(moment: datetime) -> datetime:
    if not isinstance(moment, datetime) or moment.utcoffset() is None:
        raise ValueError(f"the clock needs a timezone-aware datetime, got {moment!r}")
    return moment.astimezone(UTC)


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ini option naming the snapshot folder."""
    parser.addini(
        _SNAPSHOT_DIR_INI,
        "folder for prompt_snapshot files, relative to the rootdir",
        default=DEFAULT_SNAPSHOT_DIR,
    )


@pytest.fixture
def memory_clock() -> FrozenClock:
    """A clock frozen at :data:`FROZEN_TIME`, shared by this test's memory stores."""
    return FrozenClock()


@pytest_asyncio.fixture
async def memory_store(memory_clock: FrozenClock) -> AsyncIterator[InMemoryMemoryStore]:
    """An open in-memory store with a frozen clock and deterministic ids."""
    async with InMemoryMemoryStore(clock=memory_clock, ids=deterministic_ids()) as store:
        yield store


@pytest_asyncio.fixture
async def sqlite_memory_store(
    memory_clock: FrozenClock, tmp_path: Path
) -> AsyncIterator[SqliteMemoryStore]:
    """An open SQLite store on ``tmp_path / "memory.db"``, frozen clock, deterministic ids."""
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, clock=memory_clock, ids=deterministic_ids()) as store:
        yield store


@pytest.fixture(scope="session")
def _prompt_snapshot_extension(pytestconfig: pytest.Config) -> type[PromptSnapshotExtension]:
    root = pytestconfig.rootpath
    snapshot_dir = root / str(pytestconfig.getini(_SNAPSHOT_DIR_INI))
    testpaths = [root / str(path) for path in pytestconfig.getini("testpaths")]
    return prompt_snapshot_extension(snapshot_dir, (*testpaths, root))


@pytest.fixture
def prompt_snapshot(
    snapshot: SnapshotAssertion, _prompt_snapshot_extension: type[PromptSnapshotExtension]
) -> SnapshotAssertion:
    """syrupy's ``snapshot``, one readable text file per assertion under ``snapshots/``.

    ``assert text == prompt_snapshot``; update with ``pytest --snapshot-update``.
    """
    return snapshot.use_extension(_prompt_snapshot_extension)
