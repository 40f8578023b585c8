"""A third-party backend, as an author outside this repository would write it.

It keeps every record in one JSON-lines file, rewritten atomically on each change,
and holds an exclusive lock on the location while open: durable, one opener at a
time. It uses only names documented in docs/store-protocol.md ("Writing a backend");
``test_outside_backend.py`` copies it into a temporary directory, checks its imports
and runs the conformance kit against it there.
"""

from __future__ import annotations

import asyncio
import fcntl
import math
import os
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import IO

from recallstore.errors import MemoryConflictError, MemoryNotFoundError, StoreUnavailableError
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
    check_invalid_reason,
)
from recallstore.store import (
    Clock,
    MonotonicClock,
    StoreLifecycle,
    check_record_id,
    new_record_id,
    newest_timestamp,
    record_from_input,
    scope_matches,
    tokenize,
    utc_now,
)


class JsonLinesMemoryStore(StoreLifecycle):
    """Records in ``<directory>/records.jsonl``; one open store per directory."""

    def __init__(self, directory: str | os.PathLike[str], *, clock: Clock = utc_now) -> None:
        self.directory = Path(directory)
        self._now = clock
        self._clock = MonotonicClock(clock)
        self._records: dict[str, MemoryRecord] = {}
        self._lock = asyncio.Lock()
        self._lock_file: IO[bytes] | None = None

    def capabilities(self) -> MemoryStoreCapabilities:
        return MemoryStoreCapabilities(search="keyword", durable=True, single_opener=True)

    async def open(self) -> None:
        if self._lock_file is not None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        lock_file = (self.directory / "lock").open("ab")
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.close()
            raise StoreUnavailableError(str(self.directory), "another store has it open") from None
        self._lock_file = lock_file
        path = self.directory / "records.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        records = [MemoryRecord.model_validate_json(line) for line in lines]
        self._records = {record.id: record for record in records}
        self._clock.observe(newest_timestamp(records))

    async def aclose(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()  # releases the lock
            self._lock_file = None

    def _check_open(self) -> None:
        if self._lock_file is None:
            raise StoreUnavailableError(str(self.directory), "the store is not open")

    def _save(self, records: dict[str, MemoryRecord]) -> None:
        # Write a new file and rename it over the old one: a crash keeps one whole version.
        temporary = self.directory / "records.jsonl.new"
        with temporary.open("w", encoding="utf-8") as out:
            for record in records.values():
                out.write(record.model_dump_json() + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.directory / "records.jsonl")
        self._records = records

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        self._check_open()
        if not inputs:
            return []
        async with self._lock:
            targets: set[str] = set()
            for inp in inputs:
                if inp.supersedes is None:
                    continue
                old = self._records.get(inp.supersedes)
                if old is None:
                    raise MemoryNotFoundError(inp.supersedes)
                if old.invalid_at is not None or inp.supersedes in targets:
                    raise MemoryConflictError(inp.supersedes, "it is already invalid")
                targets.add(inp.supersedes)
            records = dict(self._records)
            created = []
            for inp in inputs:
                now = self._clock()
                record = record_from_input(inp, record_id=new_record_id(), now=now)
                created.append(record)
                records[record.id] = record
                if inp.supersedes is not None:
                    records[inp.supersedes] = records[inp.supersedes].model_copy(
                        update={"invalid_at": now, "superseded_by": record.id, "updated_at": now}
                    )
            self._save(records)
            return created

    async def get(self, id: str) -> MemoryRecord | None:
        self._check_open()
        return self._records.get(check_record_id(id))

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        check_record_id(id)
        self._check_open()
        reason = check_invalid_reason(reason)
        async with self._lock:
            record = self._records.get(id)
            if record is None:
                raise MemoryNotFoundError(id)
            if record.invalid_at is not None:
                return
            now = self._clock()
            changed = record.model_copy(
                update={"invalid_at": now, "invalid_reason": reason, "updated_at": now}
            )
            self._save({**self._records, id: changed})

    async def delete(self, id: str) -> None:
        check_record_id(id)
        self._check_open()
        async with self._lock:
            if id in self._records:
                self._save({key: r for key, r in self._records.items() if key != id})

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        self._check_open()
        if query.limit == 0 or query.kinds == ():
            return []
        now = self._now()
        candidates = sorted(
            (
                record
                for record in self._records.values()
                if scope_matches(record.scope, query.scope)
                and (query.kinds is None or record.kind in query.kinds)
                and all(tag in record.tags for tag in query.tags or ())
                and _stood_then(query, record, now)
                and (
                    query.target_key is None
                    or (record.target is not None and record.target.key == query.target_key)
                )
            ),
            key=lambda record: (record.created_at, record.id),
            reverse=True,
        )
        if query.is_listing:
            return [MemoryHit(record=record) for record in candidates[: query.limit]]
        terms = list(dict.fromkeys(tokenize(query.query or "")))[:64]
        corpus = {key: Counter(tokenize(r.content)) for key, r in self._records.items()}
        average = sum(c.total() for c in corpus.values()) / max(len(corpus), 1) or 1.0
        idf = {}
        for term in terms:
            having = sum(1 for counts in corpus.values() if term in counts)
            idf[term] = math.log(1 + (len(corpus) - having + 0.5) / (having + 0.5))
        scored = []
        for record in candidates:
            counts = corpus[record.id]
            norm = 1.2 * (0.25 + 0.75 * counts.total() / average)
            score = sum(idf[t] * counts[t] * 2.2 / (counts[t] + norm) for t in terms if counts[t])
            if score > 0:
                scored.append((score, record))
        scored.sort(key=lambda pair: -pair[0])  # stable: equal scores keep recency order
        return [MemoryHit(record=r, score=s) for s, r in scored[: query.limit]]


def _stood_then(query: MemorySearchQuery, record: MemoryRecord, now: datetime) -> bool:
    """S9, S19 and S20: validity and expiry judged at ``as_of`` (now when none), the
    record created by then, and its observed_at in [observed_after, observed_before)."""
    moment = now if query.as_of is None else query.as_of
    invalid = record.invalid_at is not None and (query.as_of is None or record.invalid_at <= moment)
    return (
        (query.as_of is None or record.created_at <= query.as_of)
        and (query.include_invalidated or not invalid)
        and (query.include_expired or not record.is_expired(moment))
        and (query.observed_after is None or record.observed_at >= query.observed_after)
        and (query.observed_before is None or record.observed_at < query.observed_before)
    )
