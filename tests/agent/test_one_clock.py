"""One "now" per conversation (issue 36 item 7, issue 37 item 3).

A store given a clock standing in June 2024 is asked about "last week": the recall
block, ``memory_search`` and ``memory_list`` all read it against that clock (by default)
or against the clock ``instantiate(clock=...)`` was given, never the wall clock, through
the async capability, a bare toolbox, an observed store and ``recallstore.sync``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from recallstore import MemoryCapability, MemoryToolbox, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.events import EventBus, ObservedMemoryStore
from recallstore.recall import assemble_recall
from recallstore.store import store_clock, utc_now
from recallstore.sync import SyncMemoryCapability, SyncMemoryStore
from recallstore.testing.pytest_plugin import FrozenClock

USER = {"user": "ana"}
JUNE_12 = datetime(2024, 6, 12, 9, 0, tzinfo=UTC)  # a Wednesday; last week: June 3 to 10
JUNE_20 = datetime(2024, 6, 20, 9, 0, tzinfo=UTC)  # a Thursday; last week: June 10 to 17
LAST_WEEK = "the kettle descaler is under the sink"
THIS_WEEK = "kettle kettle kettle: the new kettle whistles"
QUESTION = "what did I say last week about the kettle"


async def _stock(store: SqliteMemoryStore) -> None:
    await store.write(
        [
            MemoryWriteInput(
                scope=USER, content=LAST_WEEK, observed_at=datetime(2024, 6, 5, tzinfo=UTC)
            ),
            MemoryWriteInput(scope=USER, content=THIS_WEEK),  # observed at the store's now
        ]
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteMemoryStore]:
    async with SqliteMemoryStore(tmp_path / "m.db", clock=FrozenClock(JUNE_12)) as opened:
        await _stock(opened)
        yield opened


def _contents(result: dict[str, Any]) -> list[str]:
    assert result["ok"] is True, result
    return [memory["content"] for memory in result["memories"]]


LAST_WEEK_ARGS = {"since": "last week", "until": "last week"}


async def _assert_read_in_june_2024(toolbox: MemoryToolbox, week_of: str, content: str) -> None:
    search = await toolbox.call("memory_search", {"query": "kettle", **LAST_WEEK_ARGS})
    assert _contents(search) == [content]
    assert search["window"]["since"] == f"{week_of}T00:00:00+00:00"
    listing = await toolbox.call("memory_list", LAST_WEEK_ARGS)
    assert _contents(listing) == [content]
    boosted = await toolbox.call("memory_search", {"query": QUESTION})
    assert _contents(boosted)[0] == content
    assert boosted["window"]["from_query"] == "last week"


def test_a_store_tells_its_clock() -> None:
    clock = FrozenClock(JUNE_12)
    assert store_clock(SqliteMemoryStore(":memory:", clock=clock)) is clock
    assert store_clock(SqliteMemoryStore(":memory:")) is utc_now
    assert store_clock(object()) is utc_now  # a store that keeps no clock: the wall clock
    wrapped = ObservedMemoryStore(SqliteMemoryStore(":memory:", clock=clock), EventBus())
    assert store_clock(wrapped) is clock


async def test_the_toolbox_reads_last_week_by_the_stores_clock(store: SqliteMemoryStore) -> None:
    await _assert_read_in_june_2024(MemoryToolbox(store, USER), "2024-06-03", LAST_WEEK)


async def test_the_recall_reads_last_week_by_the_stores_clock(store: SqliteMemoryStore) -> None:
    recall = await assemble_recall(store, USER, QUESTION)
    assert [record.content for record in recall.hits] == [LAST_WEEK, THIS_WEEK]


async def test_instantiate_uses_the_stores_clock_for_recall_and_tools(
    store: SqliteMemoryStore,
) -> None:
    capability = MemoryCapability(store, scope_fields=["user"])
    instance = await capability.instantiate(USER, conversation_id="c1", first_user_text=QUESTION)
    assert [record.content for record in instance.recall.hits] == [LAST_WEEK, THIS_WEEK]
    await _assert_read_in_june_2024(instance.toolbox, "2024-06-03", LAST_WEEK)
    observed = MemoryCapability(ObservedMemoryStore(store, EventBus()), scope_fields=["user"])
    through = await observed.instantiate(USER, conversation_id="c2", first_user_text=QUESTION)
    await _assert_read_in_june_2024(through.toolbox, "2024-06-03", LAST_WEEK)


async def test_instantiate_takes_one_clock_for_the_conversation(store: SqliteMemoryStore) -> None:
    capability = MemoryCapability(store, scope_fields=["user"])
    clock = FrozenClock(JUNE_20)
    instance = await capability.instantiate(
        USER, conversation_id="c1", first_user_text=QUESTION, clock=clock
    )
    assert [record.content for record in instance.recall.hits] == [THIS_WEEK, LAST_WEEK]
    await _assert_read_in_june_2024(instance.toolbox, "2024-06-10", THIS_WEEK)
    later = capability.toolbox(USER, clock=clock)
    await _assert_read_in_june_2024(later, "2024-06-10", THIS_WEEK)


def test_sync_instantiate_reads_the_stores_clock_or_the_one_given(tmp_path: Path) -> None:
    sync = SyncMemoryStore(SqliteMemoryStore(tmp_path / "m.db", clock=FrozenClock(JUNE_12)))
    try:
        assert sync.clock is store_clock(sync.store)
        sync.loop.run(_stock(sync.store))  # type: ignore[arg-type]
        capability = SyncMemoryCapability(sync, scope_fields=["user"])
        instance = capability.instantiate(USER, conversation_id="c1", first_user_text=QUESTION)
        assert [record.content for record in instance.recall.hits] == [LAST_WEEK, THIS_WEEK]
        listing = instance.toolbox.call("memory_list", LAST_WEEK_ARGS)
        assert _contents(listing) == [LAST_WEEK]
        given = capability.instantiate(
            USER, conversation_id="c2", first_user_text=QUESTION, clock=FrozenClock(JUNE_20)
        )
        assert [record.content for record in given.recall.hits] == [THIS_WEEK, LAST_WEEK]
        assert _contents(given.toolbox.call("memory_list", LAST_WEEK_ARGS)) == [THIS_WEEK]
        later = capability.toolbox(USER, clock=FrozenClock(JUNE_20), time_zone="Asia/Tokyo")
        assert _contents(later.call("memory_list", LAST_WEEK_ARGS)) == [THIS_WEEK]
    finally:
        sync.close()
