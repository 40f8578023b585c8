"""Deliberately broken backends: the reference store with one plausible bug each.

``test_conformance_memory.py`` runs single kit tests against them in-process;
``test_kit_reports.py`` runs the whole kit against some of them in a pytest
subprocess, as a backend author would.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.errors import MemoryConflictError, MemoryNotFoundError
from recallstore.records import (
    MAX_LIMIT,
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
)
from recallstore.store import RecordChange, StoredRevision


class _Mutant(InMemoryMemoryStore):
    async def _everything(self, query: MemorySearchQuery) -> list[MemoryHit]:
        wide = query.model_copy(update={"limit": MAX_LIMIT, "scope": {}, "tags": None})
        return await InMemoryMemoryStore.search(self, wide)


class NoUpdatedAtBumpOnSupersede(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        originals = {i.supersedes: self._records.get(i.supersedes) for i in inputs if i.supersedes}
        created = await super().write(inputs)
        for record_id, original in originals.items():
            if original is not None:
                old = self._records[record_id]
                self._records[record_id] = old.model_copy(
                    update={"updated_at": original.updated_at}
                )
        return created


class UpdatedAtDiffersOnCreate(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        created = await super().write(inputs)
        bumped = [r.model_copy(update={"updated_at": self._clock()}) for r in created]
        self._records.update({r.id: r for r in bumped})
        return bumped


class PartialBatchOnFailure(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        written: list[MemoryRecord] = []
        for inp in inputs:
            written.extend(await super().write([inp]))
        return written


class SupersedeOfInvalidForks(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        for inp in inputs:
            old = self._records.get(inp.supersedes or "")
            if old is not None:
                self._records[old.id] = old.model_copy(update={"invalid_at": None})
        return await super().write(inputs)


class SupersedeOfMissingIsIgnored(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        fixed = [
            i if i.supersedes in self._records else i.model_copy(update={"supersedes": None})
            for i in inputs
        ]
        return await super().write(fixed)


class RacySupersede(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        for inp in inputs:
            old = self._records.get(inp.supersedes or "")
            if inp.supersedes and old is None:
                raise MemoryNotFoundError(inp.supersedes)
            if old is not None and old.is_invalidated:
                raise MemoryConflictError(old.id, "already invalid")
        await asyncio.sleep(0)  # check-then-act without holding a lock
        for inp in inputs:
            old = self._records.get(inp.supersedes or "")
            if old is not None:
                self._records[old.id] = old.model_copy(update={"invalid_at": None})
        return await super().write(inputs)


class ReinvalidateOverwrites(_Mutant):
    async def invalidate(self, id: str, reason: str | None = None) -> None:
        old = self._records.get(id)
        if old is not None:
            self._records[id] = old.model_copy(update={"invalid_at": None})
        await super().invalidate(id, reason)


class InvalidateOfMissingIsSilent(_Mutant):
    async def invalidate(self, id: str, reason: str | None = None) -> None:
        if id in self._records:
            await super().invalidate(id, reason)


class DeleteOfMissingRaises(_Mutant):
    async def delete(self, id: str) -> None:
        if id not in self._records:
            raise MemoryNotFoundError(id)
        await super().delete(id)


class DeleteHidesFromGetOnly(_Mutant):
    def __init__(self) -> None:
        super().__init__()
        self._deleted: set[str] = set()

    async def delete(self, id: str) -> None:
        self._deleted.add(id)

    async def get(self, id: str) -> MemoryRecord | None:
        return None if id in self._deleted else await super().get(id)


class GetHidesInvalidated(_Mutant):
    async def get(self, id: str) -> MemoryRecord | None:
        record = await super().get(id)
        return None if record is None or record.is_invalidated else record


class ExactScopeMatch(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        hits = await super().search(query.model_copy(update={"limit": MAX_LIMIT}))
        return [h for h in hits if not query.scope or h.record.scope == query.scope][: query.limit]


class ScopeValuesWithoutKeys(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        wanted = set(query.scope.values())
        hits = await super().search(query.model_copy(update={"scope": {}, "limit": MAX_LIMIT}))
        return [h for h in hits if wanted <= set(h.record.scope.values())][: query.limit]


class EmptyKindsMeansAll(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if query.kinds == ():
            query = query.model_copy(update={"kinds": None})
        return await super().search(query)


class TagsMatchAny(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if not query.tags:
            return await super().search(query)
        hits = await super().search(query.model_copy(update={"tags": None, "limit": MAX_LIMIT}))
        wanted = set(query.tags)
        return [h for h in hits if wanted & set(h.record.tags)][: query.limit]


class ReturnsInvalidated(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"include_invalidated": True}))


class IgnoresExpiry(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"include_expired": True}))


class ListsOldestFirst(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if not query.is_listing:
            return await super().search(query)
        hits = await super().search(query.model_copy(update={"limit": MAX_LIMIT}))
        return hits[::-1][: query.limit]


class BlankQueryIsAKeywordQuery(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return [] if query.query is not None and query.is_listing else await super().search(query)


class RanksByRecencyOnly(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        hits = await super().search(query.model_copy(update={"limit": MAX_LIMIT}))
        hits.sort(key=lambda h: (h.record.created_at, h.record.id), reverse=True)
        return hits[: query.limit]


class CaseSensitiveMatching(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        hits = await super().search(query)
        words = (query.query or "").split()
        return (
            hits
            if query.is_listing
            else [h for h in hits if any(w in h.record.content for w in words)]
        )


class SubstringMatching(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if query.is_listing:
            return await super().search(query)
        hits = await super().search(query.model_copy(update={"query": None, "limit": MAX_LIMIT}))
        words = re.findall(r"[^\W_]+", (query.query or "").casefold())
        return [h for h in hits if any(w in h.record.content.casefold() for w in words)][
            : query.limit
        ]


class WordlessQueryIsAListing(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if not re.search(r"[^\W_]", query.query or ""):
            query = query.model_copy(update={"query": None})
        return await super().search(query)


class ReturnsEveryRecordForAnyQuery(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"query": None}))


class LimitZeroMeansDefault(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"limit": query.limit or 10}))


class CapsLimitAtHundred(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"limit": min(query.limit, 100)}))


class FtsSyntaxErrors(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if any(char in (query.query or "") for char in '"*():^'):
            raise ValueError("fts5: syntax error near '\"'")
        return await super().search(query)


class TruncatesLongContent(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        short = [i.model_copy(update={"content": i.content[:8000]}) for i in inputs]
        return await super().write(short)


class FlipFloppingCapabilities(_Mutant):
    def capabilities(self) -> MemoryStoreCapabilities:
        self._calls = getattr(self, "_calls", 0) + 1
        return MemoryStoreCapabilities(search="keyword" if self._calls % 2 else "hybrid")


class ClaimsDurability(_Mutant):
    def capabilities(self) -> MemoryStoreCapabilities:
        return MemoryStoreCapabilities(search="keyword", durable=True)


class KeywordSearchIgnoresTags(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if not query.is_listing:
            query = query.model_copy(update={"tags": None})
        return await super().search(query)


class NoOpDelete(_Mutant):
    async def delete(self, id: str) -> None:
        self._check_open()


class ExactMatchEmptyScopeListing(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        hits = await super().search(query.model_copy(update={"limit": MAX_LIMIT}))
        return [h for h in hits if h.record.scope == query.scope][: query.limit]


class NonInvalidatingSupersede(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        for inp in inputs:
            if inp.supersedes is None:
                continue
            old = self._records.get(inp.supersedes)
            if old is None:
                raise MemoryNotFoundError(inp.supersedes)
            if old.is_invalidated:
                raise MemoryConflictError(old.id, "already invalid")
        return await super().write([i.model_copy(update={"supersedes": None}) for i in inputs])


class DeleteNeverReturns(_Mutant):
    async def delete(self, id: str) -> None:
        await asyncio.Event().wait()


class GetBlocksTheEventLoop(_Mutant):
    async def get(self, id: str) -> MemoryRecord | None:
        time.sleep(3600)  # noqa: ASYNC251 - never yields: only a signal can interrupt it
        return await super().get(id)


class IgnoresAsOf(_Mutant):
    """Answers an ``as_of`` search with what is valid now (S20)."""

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"as_of": None}))


class ClosedObservedWindow(_Mutant):
    """Takes ``observed_before`` as inclusive: ``[after, before]`` (S19)."""

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        before = query.observed_before
        if before is None:
            return await super().search(query)
        wide = query.model_copy(update={"observed_before": None, "limit": MAX_LIMIT})
        hits = await super().search(wide)
        return [hit for hit in hits if hit.record.observed_at <= before][: query.limit]


class WindowOnCreatedAt(_Mutant):
    """Filters the observed window on ``created_at`` (S19)."""

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        after, before = query.observed_after, query.observed_before
        if after is None and before is None:
            return await super().search(query)
        wide = query.model_copy(
            update={"observed_after": None, "observed_before": None, "limit": MAX_LIMIT}
        )
        return [
            hit
            for hit in await super().search(wide)
            if (after is None or hit.record.created_at >= after)
            and (before is None or hit.record.created_at < before)
        ][: query.limit]


class ReviseOneByOne(_Mutant):
    """Applies a revision's changes one at a time: a refused change leaves the earlier."""

    async def revise(
        self,
        revision_id: str,
        scope: Mapping[str, str],
        changes: Sequence[RecordChange],
        body: str,
        *,
        redacted_body: str | None = None,
    ) -> StoredRevision:
        kept = None
        for index, change in enumerate(changes):
            kept = await super().revise(f"{revision_id}-{index}", scope, [change], body)
        return await super().revise(revision_id, scope, [], body) if kept is None else kept


class RevertForgetsUpdatedAt(_Mutant):
    """Makes the records valid again but leaves the revision's updated_at on them."""

    async def revert_revision(self, revision_id: str) -> StoredRevision:
        kept = await self.revision(revision_id)
        reverted = await super().revert_revision(revision_id)
        for item in kept.undo if kept is not None else ():
            record = self._records[item.id]
            self._records[item.id] = record.model_copy(update={"updated_at": item.revised_at})
        return reverted


class RevertWithoutChecks(_Mutant):
    """Restores a revision's records without checking what they hold now."""

    async def revert_revision(self, revision_id: str) -> StoredRevision:
        kept = await self.revision(revision_id)
        if kept is None or kept.reverted_at is not None:
            return await super().revert_revision(revision_id)
        for item in kept.undo:
            if item.id in self._records:
                self._records[item.id] = self._records[item.id].model_copy(
                    update={"invalid_at": item.invalid_at, "invalid_reason": item.invalid_reason}
                )
        self._revisions[revision_id] = replace(kept, reverted_at=kept.created_at)
        return self._revisions[revision_id]
