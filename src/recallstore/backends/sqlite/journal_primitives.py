"""The journal extension's primitives on SQLite, mixed into ``SqliteMemoryStore``.

What they run on the ``memory_journal`` table lives in ``sqlite.journal``, below the
group commit (which joins journal appends into a batch's statements); these methods
sit above it, since they write through the store's group commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite

from recallstore.backends.journal import JournalEntry
from recallstore.backends.sqlite.journal import (
    PRUNE_BATCH,
    append_rows,
    data_version,
    journal_bounds,
    prune_before,
    read_entries,
    rewrite_rows,
    rows_holding,
    wait_for_change,
)
from recallstore.backends.sqlite.sidecars import reading_uri
from recallstore.records import format_timestamp

if TYPE_CHECKING:
    from recallstore.backends.sqlite.commit import GroupCommit
    from recallstore.backends.sqlite.driver import SqliteDriver

__all__ = ["SqliteJournalPrimitives"]


class SqliteJournalPrimitives:
    """The journal extension's primitives on SQLite, mixed into ``SqliteMemoryStore``."""

    if TYPE_CHECKING:
        path: Path
        _commits: GroupCommit
        _driver: SqliteDriver
        _watch: aiosqlite.Connection | None
        _read_only: bool

        def _check_open(self) -> None: ...
        def _reading(self) -> AbstractAsyncContextManager[aiosqlite.Connection]: ...
        def _writing(self) -> AbstractAsyncContextManager[aiosqlite.Connection]: ...

    async def _append_journal(
        self, handle: aiosqlite.Connection, rows: Sequence[Mapping[str, Any]], max_events: int
    ) -> None:
        self._commits.later(append_rows, rows)

    async def _read_journal(self, after: int, limit: int) -> list[JournalEntry]:
        async with self._reading() as conn:
            return await read_entries(conn, after, limit)

    async def _journal_candidates(
        self, handle: aiosqlite.Connection, provenance: Sequence[str], scope_values: Sequence[str]
    ) -> list[tuple[int, dict[str, Any]]]:
        return await self._commits.now(handle, rows_holding, provenance, scope_values)

    async def _journal_rewrite(
        self, handle: aiosqlite.Connection, rewrites: Sequence[tuple[int, dict[str, Any] | None]]
    ) -> None:
        self._commits.later(rewrite_rows, rewrites)

    async def _journal_bounds(self) -> tuple[int | None, int]:
        async with self._reading() as conn:
            return await journal_bounds(conn)

    async def _prune_journal(self, older_than: datetime) -> None:
        cutoff = format_timestamp(older_than)
        while True:
            async with self._writing() as conn:
                pruned = await self._commits.now(conn, prune_before, cutoff)
            if pruned < PRUNE_BATCH:
                return

    async def _journal_version(self) -> object:
        return await data_version(await self._watcher())

    async def _wait_journal(self, version: object) -> None:
        await wait_for_change(await self._watcher(), int(str(version)))

    async def _watcher(self) -> aiosqlite.Connection:
        self._check_open()
        if self._watch is None:
            # A read-only store watches through the same kind of connection it reads with.
            target = reading_uri(self.path) if self._read_only else str(self.path)
            self._watch = await self._driver.connect(
                target, uri=self._read_only, isolation_level=None
            )
        return self._watch
