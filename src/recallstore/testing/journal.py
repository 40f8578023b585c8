"""The ``"journal"`` extension's sub-suite: what a store that keeps an event journal
must guarantee (see ``recallstore.backends.journal``).

It skips itself unless ``capabilities()`` lists ``"journal"``. Use it beside
:class:`~recallstore.testing.MemoryStoreConformance` with the same ``store_factory``::

    from recallstore.testing.journal import JournalConformance

    class TestMyStoreJournal(JournalConformance):
        @pytest.fixture
        def store_factory(self, tmp_path):
            return lambda: MyStore(tmp_path / "memory.db")
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from recallstore.backends.journal import JournalEntry, SupportsJournal
from recallstore.errors import MemoryNotFoundError
from recallstore.store import FORGET_EXTENSION, JOURNAL_EXTENSION, MemoryStore, SupportsForget
from recallstore.testing._harness import StoreFactory, StoreHarness, search_ids, write_one

__all__ = ["JournalConformance"]

_WRITE = "agent.memory.write"


def _journal(store: MemoryStore) -> SupportsJournal:
    if JOURNAL_EXTENSION not in store.capabilities().extensions:
        pytest.skip("journal rule; this store does not list the 'journal' extension")
    assert isinstance(store, SupportsJournal), "lists 'journal' but is not SupportsJournal"
    return store


def _writes(entries: list[JournalEntry]) -> list[dict[str, Any]]:
    return [dict(entry.envelope["data"]) for entry in entries if entry.type == _WRITE]


class JournalConformance(StoreHarness):
    """A journaling store records each committed change once, in order, across stores."""

    @pytest.mark.asyncio
    async def test_journal_has_one_event_per_committed_change_and_none_for_a_failure(
        self, store: MemoryStore
    ) -> None:
        journal = _journal(store)
        first = await write_one(store, "lives in paris", scope={"user": "u"})
        with pytest.raises(MemoryNotFoundError):
            await write_one(store, "lives in lyon", supersedes="missing-record")
        second = await write_one(store, "lives in lyon", scope={"user": "u"}, supersedes=first.id)
        await store.invalidate(second.id, "moved")
        await store.delete(first.id)
        entries = [e for e in await journal.read_journal() if e.type == _WRITE]
        ids = [entry.id for entry in entries]
        assert ids == sorted(set(ids))
        assert [(d["operation"], d["record_ids"]) for d in _writes(entries)] == [
            ("write", [first.id]),
            ("supersede", [second.id]),
            ("invalidate", [second.id]),
            ("delete", [first.id]),
        ]
        assert entries[0].envelope["scope"] == {"user": "u"}
        assert all(d.get("contents") is None for d in _writes(entries))

    @pytest.mark.asyncio
    async def test_journal_records_a_forget_as_one_delete_event_listing_every_id(
        self, store: MemoryStore
    ) -> None:
        journal = _journal(store)
        if FORGET_EXTENSION not in store.capabilities().extensions:
            pytest.skip("forget rule; this store does not list the 'forget' extension")
        gone = [await write_one(store, f"note {n}", scope={"user": "ana"}) for n in range(3)]
        await write_one(store, "kept", scope={"user": "bo"})
        _, before = await journal.journal_bounds()
        assert await cast(SupportsForget, store).forget({"user": "ana"}) == 3
        assert await cast(SupportsForget, store).forget({"user": "ana"}) == 0
        entries = [e for e in await journal.read_journal(before) if e.type == _WRITE]
        assert [(d["operation"], d["record_ids"], d["count"]) for d in _writes(entries)] == [
            ("delete", [record.id for record in gone], 3)
        ]
        # The scope's values are what is forgotten: not in the forget's own event, and
        # no earlier event of the scope is left (issue 36).
        assert entries[0].envelope["scope"] == {}
        left = [e.envelope["scope"] for e in await journal.read_journal() if e.type == _WRITE]
        assert {"user": "ana"} not in left
        assert {"user": "bo"} in left

    @pytest.mark.asyncio
    async def test_journal_ids_increase_across_stores_and_reopening(
        self, store: MemoryStore, store_factory: StoreFactory
    ) -> None:
        journal = _journal(store)
        await write_one(store, "from the first store")
        async with store_factory() as other:
            await write_one(other, "from the second store")
        async with store_factory() as reopened:
            await write_one(reopened, "after reopening")
        entries = await journal.read_journal()
        assert len(_writes(entries)) == 3
        ids = [entry.id for entry in entries]
        assert ids == sorted(set(ids))
        oldest, newest = await journal.journal_bounds()
        assert oldest == ids[0]
        assert newest == ids[-1]

    @pytest.mark.asyncio
    async def test_journal_searches_are_recorded_once_flushed(self, store: MemoryStore) -> None:
        journal = _journal(store)
        await journal.flush_journal()
        _, before = await journal.journal_bounds()
        record = await write_one(store, "green tea")
        assert await search_ids(store, "tea") == [record.id]
        await journal.flush_journal()
        searches = [e for e in await journal.read_journal(before) if e.type != _WRITE]
        assert [e.envelope["data"]["result_ids"] for e in searches] == [[record.id]]
        assert searches[0].envelope["data"]["query"] is None

    @pytest.mark.asyncio
    async def test_journal_follow_wakes_on_another_stores_commit(
        self, store: MemoryStore, store_factory: StoreFactory
    ) -> None:
        journal = _journal(store)
        _, newest = await journal.journal_bounds()

        async def next_entry() -> JournalEntry:
            async for entry in journal.follow_journal(newest):
                return entry
            raise AssertionError("follow_journal ended")

        waiting = asyncio.create_task(next_entry())
        async with store_factory() as other:
            record = await write_one(other, "written elsewhere")
        entry = await asyncio.wait_for(waiting, timeout=10)
        assert entry.id > newest
        assert entry.envelope["data"]["record_ids"] == [record.id]
