"""A forget that erases the journal's newest rows never lets the next event reuse an id.

``memory_journal.seq`` has no AUTOINCREMENT: deleting the newest row would hand its id
to the next append, and a journal-fed bus (the memory lens's) would drop that event as
one it had already delivered — a forget the live feed never showed.
"""

from __future__ import annotations

from pathlib import Path

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput

ANA = {"user": "qzanaids"}


async def test_the_events_after_a_forget_are_numbered_after_every_event_before_it(
    tmp_path: Path,
) -> None:
    async with SqliteMemoryStore(tmp_path / "m.db") as store:
        await store.write([MemoryWriteInput(scope={"user": "bo"}, content="Bo stays.")])
        await store.write([MemoryWriteInput(scope=ANA, content="Ana's secret qzword.")])
        await store.search(MemorySearchQuery(query="qzword", scope=ANA))
        await store.flush_journal()
        before = await store.read_journal(limit=1000)
        newest = before[-1].id
        assert before[-1].envelope["scope"] == ANA  # the newest row is the forgotten scope's

        assert await store.forget(ANA) == 1
        after = await store.read_journal(limit=1000)
        forget = after[-1]
        assert forget.envelope["data"]["operation"] == "delete"
        assert forget.id > newest
        # The newest row stays (its id is the high-water mark), holding nothing of Ana.
        kept = {entry.id: entry.envelope for entry in after}
        assert kept[newest]["scope"] == {}
        assert "qzanaids" not in repr(list(kept.values()))
        assert "qzword" not in repr(list(kept.values()))
