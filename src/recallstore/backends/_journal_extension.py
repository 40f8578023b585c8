"""The journal extension's half of ``BaseMemoryStore``: its public methods, the hooks
the base class calls inside a write, and the primitives a journaling backend implements.

Kept apart from ``base.py`` so each stays small; ``BaseMemoryStore`` inherits it. See
``recallstore.backends.journal`` for what the journal guarantees.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from recallstore.backends._journal_buffer import JournalBuffer
from recallstore.backends.journal import (
    RECALL_TYPE,
    WRITE_TYPE,
    JournalEntry,
    JournalSettings,
    delete_data,
    envelope,
    quiet_reads,
    recall_data,
)
from recallstore.errors import ConfigurationError
from recallstore.records import MemoryRecord
from recallstore.store import Clock

if TYPE_CHECKING:
    from recallstore.recall import Recall

__all__ = ["JournalExtension", "JournalsRecalls"]

Handle = TypeVar("Handle")


class JournalExtension(Generic[Handle]):
    """The ``"journal"`` extension, on top of a few primitives (see docs/backends.md)."""

    _journal: JournalSettings | None
    _journal_buffer: JournalBuffer | None

    if TYPE_CHECKING:  # provided by BaseMemoryStore
        _now: Clock

        def _check_open(self) -> None: ...

        def _writing(self) -> AbstractAsyncContextManager[Handle]: ...

        @property
        def _is_open(self) -> bool: ...

    async def read_journal(self, after: int = 0, limit: int = 1000) -> list[JournalEntry]:
        """Up to ``limit`` retained journal entries with ids above ``after``, oldest first."""
        self._check_journal()
        if after < 0 or limit < 1:
            raise ValueError(f"after must be >= 0 and limit >= 1, got {after} and {limit}")
        return await self._read_journal(after, limit)

    async def journal_bounds(self) -> tuple[int | None, int]:
        """The oldest retained journal id (None when empty) and the newest ever appended."""
        self._check_journal()
        return await self._journal_bounds()

    async def follow_journal(self, after: int = 0) -> AsyncIterator[JournalEntry]:
        """Every entry after ``after``, then each new one as it commits (never ends).

        Waits on the backend's change signal (SQLite ``PRAGMA data_version``, Postgres
        ``LISTEN``), so an idle journal costs no queries of the journal table.
        """
        self._check_journal()
        while True:
            version = await self._journal_version()
            entries = await self._read_journal(after, 500)
            for entry in entries:
                yield entry
                after = entry.id
            if not entries:
                await self._wait_journal(version)

    async def flush_journal(self) -> None:
        """Write the buffered search and recall events now."""
        self._check_journal()
        if self._journal_buffer is not None:  # None: this store journals no reads
            await self._journal_buffer.flush()

    def _look_only(self) -> None:
        """Make this unopened store one to look at: it journals none of its own reads
        (``JournalSettings.reads``). A backend that can also open its storage without
        writing to it (SQLite: ``read_only=True``) extends it to do so."""
        quiet_reads(self)

    def _check_journal(self) -> None:
        self._check_open()
        if self._journal is None:
            raise ConfigurationError(
                f"this {type(self).__name__} keeps no event journal (journal=None)"
            )

    async def _start_journal(self) -> None:
        """Start flushing buffered events; a backend calls it at the end of ``open()``."""
        if self._journal_buffer is not None:
            self._journal_buffer.start()

    async def _stop_journal(self) -> None:
        """Flush and stop; a backend calls it first thing in ``aclose()``."""
        if self._journal_buffer is not None and self._is_open:
            await self._journal_buffer.stop()

    async def _journal_change(
        self, handle: Handle, scope: Mapping[str, str], data: Mapping[str, Any]
    ) -> None:
        """Append a write event inside the change's own transaction (``handle``)."""
        assert self._journal is not None
        row = envelope(WRITE_TYPE, scope, data, self._now())
        await self._append_journal(handle, [row], self._journal.max_events)

    async def _journal_delete(self, handle: Handle, id: str, before: MemoryRecord | None) -> None:
        """Journal a delete of ``id`` (``before``: the record, or None when absent)."""
        if self._journal is None:
            return
        data = {**delete_data(id, before), "count": int(before is not None)}
        await self._journal_change(handle, before.scope if before else {}, data)

    async def _flush_journal_rows(self, rows: list[dict[str, Any]]) -> None:
        assert self._journal is not None
        async with self._writing() as handle:
            await self._append_journal(handle, rows, self._journal.max_events)

    async def _prune_journal_by_age(self) -> None:
        assert self._journal is not None
        await self._prune_journal(self._now() - self._journal.max_age)

    # --- journal primitives: only for a backend that keeps the journal ------------------

    async def _append_journal(
        self, handle: Handle, rows: Sequence[Mapping[str, Any]], max_events: int
    ) -> None:
        """Append ``rows`` (envelopes without ids) in the transaction ``handle``, each
        numbered by the journal's sequence in commit order; then delete the rows more
        than ``max_events`` behind the newest."""
        raise NotImplementedError(f"{type(self).__name__} keeps no event journal")

    async def _read_journal(self, after: int, limit: int) -> list[JournalEntry]:
        """Up to ``limit`` entries with ids above ``after``, oldest first."""
        raise NotImplementedError(f"{type(self).__name__} keeps no event journal")

    async def _journal_bounds(self) -> tuple[int | None, int]:
        """The oldest retained id (None when empty) and the newest id ever appended."""
        raise NotImplementedError(f"{type(self).__name__} keeps no event journal")

    async def _prune_journal(self, older_than: datetime) -> None:
        """Delete rows stamped before ``older_than``, in short transactions."""
        raise NotImplementedError(f"{type(self).__name__} keeps no event journal")

    async def _journal_version(self) -> object:
        """A token that changes when another connection commits (read before a look)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no event journal")

    async def _wait_journal(self, version: object) -> None:
        """Return once the token differs from ``version`` (or after a second at most)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no event journal")


class JournalsRecalls:
    """Makes a journaling backend a ``RecallObserver``: ``assemble_recall`` over it
    journals ``agent.memory.recall``. A backend class lists it before
    ``BaseMemoryStore`` (stores without a journal stay plain stores)."""

    _journal: JournalSettings | None
    _journal_buffer: JournalBuffer | None

    if TYPE_CHECKING:  # provided by BaseMemoryStore
        _now: Clock

    def observe_recall(self, recall: Recall) -> None:
        """Journal ``agent.memory.recall`` for a recall assembled over this store."""
        if self._journal is not None and self._journal_buffer is not None:
            data = recall_data(recall, include_query_text=self._journal.include_query_text)
            self._journal_buffer.add(envelope(RECALL_TYPE, recall.scope, data, self._now()))
