"""A third-party backend for the registry tests: records in one JSON Lines file.

It lives outside ``src/recallstore`` and uses only the public API: it subclasses
``BaseMemoryStore`` (so the shared rules come for free) and keeps an
``InMemoryMemoryStore`` as its search index, rebuilt whenever the file changes.
Every write rewrites the file atomically under an exclusive ``flock``, so several
stores (and processes) can share one file. It is registered for the ``jsonl`` URL
scheme by an entry point the tests install (``jsonl:///path/to/memory.jsonl``).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Self

from recallstore import (
    BaseMemoryStore,
    ConfigurationError,
    InMemoryMemoryStore,
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    StoreDescription,
    StoreUnavailableError,
)
from recallstore.backends.base import RecordChanges
from recallstore.store import EXPORT_EXTENSION, IMPORT_EXTENSION, newest_timestamp

SCHEME = "jsonl"


class JsonlMemoryStore(BaseMemoryStore[InMemoryMemoryStore]):
    """A durable store in one JSON Lines file: one record per line, oldest first."""

    search_mode = "keyword"
    durable = True
    extensions = frozenset({IMPORT_EXTENSION, EXPORT_EXTENSION})

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        """``options`` are the base class's: ``clock`` and ``ids``."""
        super().__init__(**options)
        self.path = Path(path).absolute()
        self._lock = asyncio.Lock()
        self._open = False
        self._index = InMemoryMemoryStore(clock=self._now)
        self._signature: tuple[int, int, int] | None = None

    @classmethod
    def from_url(cls, url: str) -> Self:
        """``jsonl:///absolute/path.jsonl`` or ``jsonl:relative/path.jsonl``."""
        rest = url[len(SCHEME) + 1 :]
        path = rest[2:] if rest.startswith("//") else rest
        if not path:
            raise ConfigurationError(f"memory store target {url!r} names no file")
        return cls(path)

    def describe(self) -> StoreDescription:
        return StoreDescription(label=type(self).__name__, target=str(self.path), path=self.path)

    async def open(self) -> None:
        if not self.path.parent.is_dir():
            raise StoreUnavailableError(str(self.path), "its directory does not exist")
        self._open = True

    async def aclose(self) -> None:
        self._open = False

    @property
    def _is_open(self) -> bool:
        return self._open

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[InMemoryMemoryStore]:
        async with self._lock:
            self._check_open()
            yield await self._refresh()

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[InMemoryMemoryStore]:
        async with self._lock:
            self._check_open()
            async with self._file_lock():
                index = await self._refresh()
                try:
                    yield index
                    lines = [r.model_dump_json() + "\n" async for r in index.export_records()]
                    self._save(lines)
                except BaseException:
                    self._signature = None  # the index may hold changes the file lacks
                    raise

    async def _fetch_records(
        self, handle: InMemoryMemoryStore, ids: Sequence[str]
    ) -> dict[str, MemoryRecord]:
        found = {record_id: await handle.get(record_id) for record_id in ids}
        return {record_id: record for record_id, record in found.items() if record is not None}

    async def _insert(self, handle: InMemoryMemoryStore, records: Sequence[MemoryRecord]) -> None:
        await handle.import_records(records)

    async def _update(self, handle: InMemoryMemoryStore, id: str, changes: RecordChanges) -> None:
        record = await handle.get(id)
        assert record is not None
        await handle.delete(id)
        await handle.import_records([record.model_copy(update=dict(changes))])

    async def _delete(self, id: str) -> None:
        async with self._writing() as index:
            await index.delete(id)

    async def _search(
        self, query: MemorySearchQuery, terms: Sequence[str], now: datetime
    ) -> list[MemoryHit]:
        async with self._reading() as index:
            return await index.search(query)

    async def _export(self, scope: Mapping[str, str]) -> AsyncIterator[MemoryRecord]:
        async with self._reading() as index:
            records = [record async for record in index.export_records(scope)]
        for record in records:
            yield record

    async def _refresh(self) -> InMemoryMemoryStore:
        """The index, rebuilt from the file when someone (maybe another store) changed it."""
        signature = self._stat()
        if signature != self._signature:
            self._signature = None
            records = self._load()
            index = InMemoryMemoryStore(clock=self._now)
            await index.import_records(records)
            self._index = index
            self._clock.observe(newest_timestamp(records))
            self._signature = signature
        return self._index

    def _stat(self) -> tuple[int, int, int]:
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return (0, 0, 0)
        return (info.st_ino, info.st_mtime_ns, info.st_size)

    def _load(self) -> list[MemoryRecord]:
        if not self.path.exists():
            return []
        with self.path.open(encoding="utf-8") as handle:
            return [MemoryRecord.model_validate_json(line) for line in handle if line.strip()]

    def _save(self, lines: list[str]) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        with temporary.open("w", encoding="utf-8") as handle:
            handle.writelines(lines)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)
        self._signature = self._stat()

    @asynccontextmanager
    async def _file_lock(self) -> AsyncIterator[None]:
        """An exclusive lock on ``<file>.lock`` shared with every other store and process."""
        with self.path.with_name(self.path.name + ".lock").open("a") as handle:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await asyncio.sleep(0.002)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
