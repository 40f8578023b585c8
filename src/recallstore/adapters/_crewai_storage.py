"""CrewAI's unified ``Memory`` on recallstore: a ``StorageBackend`` bound to one host scope.

CrewAI hands a storage backend vectors, never text: ``search`` gets the query's
embedding. :class:`RecallstoreStorage` therefore comes with its own embedder
(:attr:`RecallstoreStorage.embedder`, for ``Memory(embedder=...)``) whose "vectors" are
keys naming the text they were made from; ``search`` turns one back into its text and
runs recallstore's search (by words, or hybrid when the store has an embedder).

Every record lives in the host's scope, fixed when the storage is made; CrewAI's scope
path (``/agent/researcher``) is kept in the payload and filters within it. A record's
CrewAI id is its ``target`` key. Nothing is deleted: ``delete`` and ``reset`` invalidate,
``update`` supersedes; ``list_records`` is newest first.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from recallstore.adapters._framework import _framework_imports
from recallstore.errors import ConfigurationError
from recallstore.records import (
    MAX_CONTENT_CHARS,
    MemoryRecord,
    MemorySearchQuery,
    MemoryTarget,
    MemoryWriteInput,
)
from recallstore.sync import SyncMemoryStore
from recallstore.values import MAX_LIMIT, MAX_TAG_CHARS, MAX_TAGS

with _framework_imports("crewai", "the CrewAI adapter", "crewai"):
    from crewai.memory.types import MemoryRecord as CrewRecord
    from crewai.memory.types import ScopeInfo

SECTION = "crewai.memory"
"""``target.section`` of the records CrewAI's Memory stores; ``target.key`` is its id."""
_TOP, _STEP = 0.84, 0.001
"""Scores of search results, best first: between CrewAI's direct-answer (0.8) and
consolidation (0.85) thresholds, so its LLM neither merges nor re-explores our results."""


class RecallstoreStorage:
    """A CrewAI ``StorageBackend`` on ``store``, every record in ``scope``."""

    def __init__(self, store: SyncMemoryStore, scope: dict[str, str]) -> None:
        if not scope:
            raise ConfigurationError("RecallstoreStorage needs the host's scope, got none")
        self._store = store
        self.scope = dict(scope)
        """The host's scope: every record is written and read there."""
        self._texts: dict[float, str] = {}
        self._keys: dict[str, float] = {}
        self._lock = threading.Lock()

    def embedder(self, texts: Sequence[str]) -> list[list[float]]:
        """CrewAI's embedder for this storage: each text's key (see the module)."""
        keys: list[list[float]] = []
        with self._lock:
            for text in texts:
                key = self._keys.get(text)
                if key is None:
                    key = self._keys[text] = float(len(self._keys) + 1)
                    self._texts[key] = text
                keys.append([key])
        return keys

    def _text(self, embedding: Sequence[float]) -> str:
        text = self._texts.get(embedding[0]) if len(embedding) == 1 else None
        if text is None:
            raise ConfigurationError(
                "RecallstoreStorage searches by text: build the Memory with "
                "embedder=storage.embedder"
            )
        return text

    # -- reads -------------------------------------------------------------------------

    def _valid(self, query: str | None = None, limit: int = MAX_LIMIT) -> list[MemoryRecord]:
        hits = self._store.search(MemorySearchQuery(query=query, scope=self.scope, limit=limit))
        return [hit.record for hit in hits if _crew_id(hit.record) is not None]

    def search(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[CrewRecord, float]]:
        """recallstore's search for the embedding's text, best first, CrewAI's filters applied."""
        found = [
            r
            for r in self._valid(self._text(query_embedding)[:MAX_CONTENT_CHARS], MAX_LIMIT)
            if _matches(r, scope_prefix, categories, metadata_filter)
        ]
        scored = [(_crew(r), _TOP - _STEP * rank) for rank, r in enumerate(found[:limit])]
        return [(record, score) for record, score in scored if score >= min_score]

    def get_record(self, record_id: str) -> CrewRecord | None:
        """The valid record with CrewAI id ``record_id``, or None."""
        record = self._by_id(record_id)
        return None if record is None else _crew(record)

    def _by_id(self, record_id: str) -> MemoryRecord | None:
        hits = self._store.search(
            MemorySearchQuery(scope=self.scope, target_key=record_id, limit=MAX_LIMIT)
        )
        return next((h.record for h in hits if _crew_id(h.record) == record_id), None)

    def list_records(
        self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[CrewRecord]:
        """The valid records under ``scope_prefix``, newest first."""
        records = [r for r in self._valid() if _matches(r, scope_prefix, None, None)]
        return [_crew(r) for r in records[offset : offset + limit]]

    def count(self, scope_prefix: str | None = None) -> int:
        """How many valid records are under ``scope_prefix``."""
        return len(self.list_records(scope_prefix, limit=MAX_LIMIT))

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The immediate child scope paths under ``parent``."""
        base = parent.rstrip("/")
        children = set()
        for record in self.list_records(parent if base else None, limit=MAX_LIMIT):
            rest = record.scope[len(base) :].strip("/")
            if rest:
                children.add(f"{base}/{rest.split('/')[0]}")
        return sorted(children)

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        """Each category under ``scope_prefix`` and how many records carry it."""
        counts: dict[str, int] = {}
        for record in self.list_records(scope_prefix, limit=MAX_LIMIT):
            for category in record.categories:
                counts[category] = counts.get(category, 0) + 1
        return counts

    def get_scope_info(self, scope: str) -> ScopeInfo:
        """Records, categories, dates and child scopes of ``scope``."""
        records = self.list_records(scope, limit=MAX_LIMIT)
        times = [r.created_at for r in records]
        return ScopeInfo(
            path=scope,
            record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min(times, default=None),
            newest_record=max(times, default=None),
            child_scopes=self.list_scopes(scope),
        )

    # -- writes ------------------------------------------------------------------------

    def save(self, records: list[CrewRecord]) -> None:
        """Store CrewAI's records; one already stored under its id is superseded."""
        self._store.write([self._input(r, self._by_id(r.id)) for r in records])

    def update(self, record: CrewRecord) -> None:
        """Supersede the record with ``record.id`` by ``record`` (the old text stays in
        the audit trail)."""
        self.save([record])

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """Invalidate the matching records (nothing is deleted); how many."""
        doomed = [
            r
            for r in self._valid()
            if _matches(r, scope_prefix, categories, metadata_filter)
            and (record_ids is None or _crew_id(r) in record_ids)
            and (older_than is None or _created(r) < older_than)
        ]
        for record in doomed:
            self._store.invalidate(record.id, "deleted by CrewAI's Memory")
        return len(doomed)

    def reset(self, scope_prefix: str | None = None) -> None:
        """Invalidate every record under ``scope_prefix``."""
        self.delete(scope_prefix=scope_prefix)

    def close(self) -> None:
        """Nothing to do: the host opened the store and closes it."""

    async def asave(self, records: list[CrewRecord]) -> None:
        """:meth:`save`, off the event loop."""
        await asyncio.to_thread(self.save, records)

    async def asearch(self, query_embedding: list[float], **filters: Any) -> list[Any]:
        """:meth:`search`, off the event loop."""
        return await asyncio.to_thread(lambda: self.search(query_embedding, **filters))

    async def adelete(self, **filters: Any) -> int:
        """:meth:`delete`, off the event loop."""
        return await asyncio.to_thread(lambda: self.delete(**filters))

    def _input(self, record: CrewRecord, replaces: MemoryRecord | None) -> MemoryWriteInput:
        tags = [c[:MAX_TAG_CHARS].strip() for c in record.categories if c.strip()]
        return MemoryWriteInput(
            scope=self.scope,
            kind="fact",
            content=record.content,
            tags=tuple(dict.fromkeys(tags))[:MAX_TAGS],
            target=MemoryTarget(section=SECTION, key=record.id),
            payload={
                "crewai": {
                    "scope": record.scope,
                    "categories": list(record.categories),
                    "metadata": record.metadata,
                    "importance": record.importance,
                    "source": record.source,
                    "private": record.private,
                    "created_at": _aware(record.created_at).isoformat(),
                }
            },
            supersedes=None if replaces is None else replaces.id,
        )


def _crew_id(record: MemoryRecord) -> str | None:
    target = record.target
    return target.key if target is not None and target.section == SECTION else None


def _fields(record: MemoryRecord) -> dict[str, Any]:
    payload = record.payload if isinstance(record.payload, dict) else {}
    fields = payload.get("crewai")
    return fields if isinstance(fields, dict) else {}


def _created(record: MemoryRecord) -> datetime:
    return record.created_at


def _crew(record: MemoryRecord) -> CrewRecord:
    fields = _fields(record)
    return CrewRecord(
        id=_crew_id(record) or record.id,
        content=record.content,
        scope=str(fields.get("scope", "/")),
        categories=list(fields.get("categories", [])),
        metadata=dict(fields.get("metadata", {})),
        importance=float(fields.get("importance", 0.5)),
        created_at=record.created_at.astimezone(UTC).replace(tzinfo=None),
        last_accessed=record.updated_at.astimezone(UTC).replace(tzinfo=None),
        source=fields.get("source"),
        private=bool(fields.get("private", False)),
    )


def _matches(
    record: MemoryRecord,
    scope_prefix: str | None,
    categories: list[str] | None,
    metadata_filter: dict[str, Any] | None,
) -> bool:
    fields = _fields(record)
    path = str(fields.get("scope", "/"))
    prefix = (scope_prefix or "/").rstrip("/")
    if prefix and path != prefix and not path.startswith(prefix + "/"):
        return False
    if categories and not set(categories) & set(fields.get("categories", [])):
        return False
    metadata = fields.get("metadata", {})
    return all(metadata.get(key) == value for key, value in (metadata_filter or {}).items())


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
