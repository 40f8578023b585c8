"""EventBus: numbering, fan-out, scope filters, replay and gaps, overflow, listeners, threads."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest

from recallstore.events import (
    EVENT_TYPES,
    EventBus,
    MemoryEvent,
    MemorySearchData,
    MemorySearchEvent,
    MemoryWriteData,
    MemoryWriteEvent,
    StreamGap,
    parse_event,
)


def write_event(scope: dict[str, str] | None = None, record_id: str = "r1") -> MemoryWriteEvent:
    return MemoryWriteEvent(
        scope=scope or {"user": "u1"},
        data=MemoryWriteData(operation="write", record_ids=(record_id,), kinds=("fact",), count=1),
    )


def drain(subscription: object) -> list[MemoryEvent | StreamGap]:
    items = []
    while (item := subscription.get_nowait()) is not None:  # type: ignore[attr-defined]
        items.append(item)
    return items


def test_publish_numbers_events_from_one_and_returns_the_numbered_copy() -> None:
    bus = EventBus()
    first = bus.publish(write_event())
    second = bus.publish(write_event())
    assert (first.id, second.id, bus.last_id) == (1, 2, 2)
    assert bus.stats().published == 2


def test_event_json_round_trips_through_parse_event() -> None:
    event = EventBus().publish(write_event({"tenant": "acme", "user": "u1"}))
    parsed = parse_event(event.model_dump_json())
    assert parsed == event
    assert isinstance(parsed, MemoryWriteEvent)
    assert event.model_dump(mode="json")["timestamp"].endswith("Z")


def test_event_types_lists_the_memory_events_then_gap() -> None:
    assert EVENT_TYPES == (
        "agent.memory.write",
        "agent.memory.search",
        "agent.memory.recall",
        "agent.memory.learn",
        "agent.memory.learned",
        "gap",
    )


async def test_subscription_receives_events_published_after_it_in_order() -> None:
    bus = EventBus()
    bus.publish(write_event())
    subscription = bus.subscribe()
    for index in range(3):
        bus.publish(write_event(record_id=f"r{index}"))
    received = [await anext(subscription) for _ in range(3)]
    assert [event.id for event in received if isinstance(event, MemoryEvent)] == [2, 3, 4]


async def test_scope_filter_is_subset_match_and_hides_other_tenants() -> None:
    bus = EventBus()
    acme = bus.subscribe(scope={"tenant": "acme"})
    acme_u1 = bus.subscribe(scope={"tenant": "acme", "user": "u1"})
    bus.publish(write_event({"tenant": "acme", "user": "u1"}))
    bus.publish(write_event({"tenant": "acme", "user": "u2"}))
    bus.publish(write_event({"tenant": "globex", "user": "u1"}))
    bus.publish(write_event({}))
    assert [e.scope["user"] for e in drain(acme)] == ["u1", "u2"]  # type: ignore[union-attr]
    assert [e.id for e in drain(acme_u1)] == [1]  # type: ignore[union-attr]


async def test_last_event_id_replays_exactly_the_missed_events() -> None:
    bus = EventBus(replay_size=10)
    for index in range(5):
        bus.publish(write_event(record_id=f"r{index}"))
    subscription = bus.subscribe(last_event_id=2)
    bus.publish(write_event(record_id="live"))
    assert [e.id for e in drain(subscription)] == [3, 4, 5, 6]  # type: ignore[union-attr]


async def test_last_event_id_older_than_the_buffer_starts_with_an_expired_gap() -> None:
    bus = EventBus(replay_size=3)
    for index in range(10):
        bus.publish(write_event(record_id=f"r{index}"))
    items = drain(bus.subscribe(last_event_id=2))
    gap = items[0]
    assert isinstance(gap, StreamGap)
    assert (gap.reason, gap.after_id, gap.first_available_id, gap.missed) == ("expired", 2, 8, 5)
    assert [e.id for e in items[1:]] == [8, 9, 10]  # type: ignore[union-attr]


async def test_last_event_id_from_a_previous_server_gets_a_reset_gap_and_everything() -> None:
    bus = EventBus(replay_size=2)
    for index in range(3):
        bus.publish(write_event(record_id=f"r{index}"))
    items = drain(bus.subscribe(last_event_id=500))
    assert isinstance(items[0], StreamGap)
    assert (items[0].reason, items[0].missed) == ("reset", 1)
    assert [e.id for e in items[1:]] == [2, 3]  # type: ignore[union-attr]


async def test_up_to_date_last_event_id_replays_nothing_and_no_gap() -> None:
    bus = EventBus()
    bus.publish(write_event())
    assert drain(bus.subscribe(last_event_id=1)) == []
    assert drain(bus.subscribe(last_event_id=0)) == [bus.replay()[0]]


async def test_slow_subscriber_drops_oldest_counts_them_and_announces_a_gap() -> None:
    bus = EventBus()
    slow = bus.subscribe(max_queue=3)
    fast = bus.subscribe()
    for index in range(10):
        bus.publish(write_event(record_id=f"r{index}"))
    items = drain(slow)
    gap = items[0]
    assert isinstance(gap, StreamGap)
    assert (gap.reason, gap.missed, gap.first_available_id) == ("overflow", 7, 8)
    assert [e.id for e in items[1:]] == [8, 9, 10]  # type: ignore[union-attr]
    assert slow.stats().dropped == 7
    assert slow.stats().delivered == 3
    assert len(drain(fast)) == 10
    assert bus.stats().dropped == 7


async def test_raising_listener_is_isolated_and_counted() -> None:
    bus = EventBus()
    seen: list[int] = []

    def broken(event: MemoryEvent) -> None:
        raise RuntimeError("listener bug")

    bus.add_listener(broken)
    remove = bus.add_listener(lambda event: seen.append(event.id))
    for _ in range(5):
        bus.publish(write_event())
    assert seen == [1, 2, 3, 4, 5]
    assert bus.stats().listener_failures == 5
    remove()
    bus.publish(write_event())
    assert seen == [1, 2, 3, 4, 5]
    assert bus.stats().listeners == 1


async def test_listener_scope_filter() -> None:
    bus = EventBus()
    seen: list[str] = []
    bus.add_listener(lambda event: seen.append(event.scope["user"]), scope={"user": "u2"})
    bus.publish(write_event({"user": "u1"}))
    bus.publish(write_event({"user": "u2"}))
    assert seen == ["u2"]


async def test_publish_from_another_thread_wakes_a_waiting_subscriber() -> None:
    bus = EventBus()
    subscription = bus.subscribe()
    waiter = asyncio.create_task(anext(subscription))
    await asyncio.sleep(0)
    thread = threading.Thread(target=lambda: [bus.publish(write_event()) for _ in range(50)])
    thread.start()
    first = await asyncio.wait_for(waiter, 5)
    thread.join(5)
    rest = [await asyncio.wait_for(anext(subscription), 5) for _ in range(49)]
    assert [e.id for e in [first, *rest]] == list(range(1, 51))  # type: ignore[union-attr]


async def test_close_ends_async_for_and_unsubscribes() -> None:
    bus = EventBus()
    subscription = bus.subscribe()

    async def consume() -> list[int]:
        return [event.id async for event in subscription]  # type: ignore[union-attr]

    task = asyncio.create_task(consume())
    bus.publish(write_event())
    await asyncio.sleep(0.01)
    bus.close()
    assert await asyncio.wait_for(task, 5) == [1]
    assert bus.stats().subscriptions == 0
    assert bus.subscribe().closed


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="max_queue"):
        EventBus(max_queue=0)
    with pytest.raises(ValueError, match="last_event_id"):
        EventBus().subscribe(last_event_id=-1)


def test_search_event_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="result_count"):
        MemorySearchEvent(
            data=MemorySearchData(mode="listing", query_chars=0, limit=10, result_count=-1)
        )


async def test_concurrent_publishers_deliver_ids_in_order_to_every_subscriber() -> None:
    bus = EventBus()
    subscriptions = [bus.subscribe(max_queue=2000) for _ in range(3)]
    threads = [
        threading.Thread(target=lambda: [bus.publish(write_event()) for _ in range(250)])
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    for subscription in subscriptions:
        ids = [event.id for event in drain(subscription)]  # type: ignore[union-attr]
        assert ids == list(range(1, 1001))


def test_a_subscription_whose_event_loop_closed_is_dropped_by_the_next_publish() -> None:
    bus = EventBus()
    subscription = bus.subscribe()
    other = bus.subscribe()

    async def wait_then_give_up() -> None:
        waiter = asyncio.ensure_future(anext(subscription))
        await asyncio.sleep(0)  # the waiter now sleeps on this loop
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter

    loop = asyncio.new_event_loop()
    loop.run_until_complete(wait_then_give_up())
    loop.close()
    published = bus.publish(write_event())  # no running loop here, the consumer's is closed
    assert published.id == 1
    assert subscription.closed
    assert bus.stats().subscriptions == 1
    assert [event.id for event in drain(other)] == [1]  # type: ignore[union-attr]
    bus.publish(write_event())
    assert [event.id for event in drain(other)] == [2]  # type: ignore[union-attr]
