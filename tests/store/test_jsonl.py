"""recallstore.jsonl against a store without the optional extensions (a third-party backend)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from types import TracebackType
from typing import Self

import pytest

from recallstore import (
    ConfigurationError,
    InMemoryMemoryStore,
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
)
from recallstore.jsonl import export_jsonl, import_records, iter_records, read_jsonl


class PlainStore:
    """The six protocol methods only, over the reference store: no import/export."""

    def __init__(self) -> None:
        self.inner = InMemoryMemoryStore()

    async def __aenter__(self) -> Self:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.inner.__aexit__(kind, exc, tb)

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        return await self.inner.write(inputs)

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await self.inner.search(query)

    async def get(self, id: str) -> MemoryRecord | None:
        return await self.inner.get(id)

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        await self.inner.invalidate(id, reason)

    async def delete(self, id: str) -> None:
        await self.inner.delete(id)

    def capabilities(self) -> MemoryStoreCapabilities:
        return MemoryStoreCapabilities(search="keyword", durable=False)


async def test_export_falls_back_to_one_listing_oldest_first() -> None:
    async with PlainStore() as store:
        [old] = await store.write([MemoryWriteInput(scope={"u": "1"}, content="old fact")])
        [new] = await store.write(
            [MemoryWriteInput(scope={"u": "1"}, content="new fact", supersedes=old.id)]
        )
        [other] = await store.write([MemoryWriteInput(scope={"u": "2"}, content="other")])
        everything = [record async for record in iter_records(store)]
        assert [r.id for r in everything] == [old.id, new.id, other.id]
        assert everything[0].superseded_by == new.id

        out = io.StringIO()
        assert await export_jsonl(store, out, scope={"u": "1"}) == 2
        assert [r.id for r in read_jsonl(out.getvalue().splitlines())] == [old.id, new.id]


async def test_export_refuses_what_one_listing_cannot_hold() -> None:
    async with PlainStore() as store:
        await store.write([MemoryWriteInput(scope={}, content=f"n {i}") for i in range(1000)])
        with pytest.raises(ConfigurationError, match="lacks the 'export' extension"):
            [record async for record in iter_records(store)]


async def test_import_needs_the_extension_and_writes_nothing_without_it() -> None:
    async with PlainStore() as source:
        records = await source.write([MemoryWriteInput(scope={}, content="kept")])
    async with PlainStore() as store:
        with pytest.raises(ConfigurationError, match="lacks the 'import' extension"):
            await import_records(store, records)
        assert await store.search(MemorySearchQuery(include_invalidated=True)) == []
