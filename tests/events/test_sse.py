"""The SSE stream over a real uvicorn server on 127.0.0.1, read by a real streaming client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from recallstore import ConfigurationError, MemoryStore, MemoryWriteInput
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.events import EventBus, ObservedMemoryStore, parse_event
from recallstore.events.sse import create_sse_app
from recallstore.recall import assemble_recall
from recallstore.toolbox import MemoryToolbox

from .conftest import SseMessage, SseReader, raw_http_request, serve

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ADA = {"tenant": "acme", "user": "ada"}
BOB = {"tenant": "globex", "user": "bob"}


@pytest.fixture
def bus() -> EventBus:
    return EventBus(replay_size=100)


@pytest.fixture
def server(bus: EventBus) -> Iterator[str]:
    with serve(create_sse_app(bus, token=TOKEN, ping_seconds=0.3)) as url:
        yield url
    bus.close()


@asynccontextmanager
async def stream(
    url: str, *, headers: dict[str, str] | None = None, params: Any = None
) -> AsyncIterator[SseReader]:
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(10.0)) as client,
        client.stream("GET", url + "/", headers=headers or AUTH, params=params) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        reader = SseReader(response)
        opening = await reader.next(skip_comments=False)
        assert opening.comments == ["recallstore events"]
        yield reader


async def toolbox_session(store: MemoryStore) -> None:
    """A short conversation: save, search, correct with supersedes, invalidate, recall."""
    toolbox = MemoryToolbox(store, ADA, conversation_id="conv-1", run_id="run-1")
    saved = await toolbox.call("memory_save", {"content": "Ada drinks green tea"})
    assert saved["ok"], saved
    assert (await toolbox.call("memory_search", {"query": "tea"}))["ok"]
    corrected = await toolbox.call(
        "memory_save", {"content": "Ada drinks black tea", "supersedes": saved["memory"]["id"]}
    )
    assert corrected["ok"], corrected
    other = await toolbox.call("memory_save", {"content": "Ada lives in Leeds", "kind": "profile"})
    invalidated = await toolbox.call("memory_invalidate", {"id": other["memory"]["id"]})
    assert invalidated["ok"], invalidated
    await assemble_recall(store, ADA, "what tea?", conversation_id="conv-2")


SESSION_TYPES = [
    "agent.memory.search",  # a plain save first looks for an equal memory
    "agent.memory.write",
    "agent.memory.search",
    "agent.memory.write",
    "agent.memory.search",
    "agent.memory.write",
    "agent.memory.write",
    "agent.memory.search",
    "agent.memory.search",
    "agent.memory.recall",
]


async def wait_for(condition: Any, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in time")


def is_recall(message: SseMessage) -> bool:
    return message.event == "agent.memory.recall"


async def test_toolbox_session_streams_write_search_recall_in_order_with_ids(
    server: str, bus: EventBus, sqlite_store: SqliteMemoryStore
) -> None:
    store = ObservedMemoryStore(sqlite_store, bus)
    async with stream(server) as reader:
        await toolbox_session(store)
        messages = await reader.until(is_recall)
    assert [m.event for m in messages] == SESSION_TYPES
    assert [m.id for m in messages] == [str(n) for n in range(1, 11)]
    events = [parse_event(m.data) for m in messages]
    assert events == list(bus.replay())
    assert all(
        str(e.id) == m.id and e.type == m.event for e, m in zip(events, messages, strict=True)
    )
    assert {e.conversation_id for e in events} == {"conv-1", "conv-2"}
    assert "tea" not in "".join(m.data for m in messages)  # no content by default


async def test_reconnect_with_last_event_id_receives_exactly_the_missed_events(
    server: str, bus: EventBus
) -> None:
    store = ObservedMemoryStore(InMemoryMemoryStore(), bus)
    async with stream(server) as reader:
        await store.write([MemoryWriteInput(scope=ADA, content="one")])
        await store.write([MemoryWriteInput(scope=ADA, content="two")])
        seen = [await reader.next(), await reader.next()]
    assert [m.id for m in seen] == ["1", "2"]
    await wait_for(lambda: bus.stats().subscriptions == 0)  # the server let the client go
    await toolbox_session(store)  # events 3..12 happen while disconnected
    async with stream(server, headers={**AUTH, "Last-Event-ID": "2"}) as reader:
        missed = await reader.until(is_recall)
        await store.write([MemoryWriteInput(scope=ADA, content="live")])
        live = await reader.next()
    assert [m.id for m in missed] == [str(n) for n in range(3, 13)]
    assert [m.event for m in missed] == SESSION_TYPES
    assert (live.id, live.event) == ("13", "agent.memory.write")


async def test_last_event_id_older_than_the_buffer_gets_an_explicit_gap() -> None:
    bus = EventBus(replay_size=3)
    with serve(create_sse_app(bus, token=TOKEN)) as url:
        for n in range(6):
            await ObservedMemoryStore(InMemoryMemoryStore(), bus).write(
                [MemoryWriteInput(scope=ADA, content=f"fact {n}")]
            )
        async with stream(url, params={"last_event_id": "1"}) as reader:
            gap = await reader.next()
            rest = [await reader.next() for _ in range(3)]
        bus.close()
    assert gap.event == "gap"
    assert gap.id is None
    assert json.loads(gap.data) == {
        "type": "gap",
        "reason": "expired",
        "after_id": 1,
        "first_available_id": 4,
        "missed": 2,
    }
    assert [m.id for m in rest] == ["4", "5", "6"]


async def test_requests_without_the_token_get_401(server: str) -> None:
    async with httpx.AsyncClient(timeout=10.0) as client:
        missing = await client.get(server + "/")
        wrong = await client.get(server + "/", headers={"Authorization": "Bearer nope"})
        wrong_scheme = await client.get(server + "/", headers={"Authorization": f"Basic {TOKEN}"})
        bad_cookie = await client.get(server + "/", headers={"Cookie": "recallstore_token=nope"})
    for response in (missing, wrong, wrong_scheme, bad_cookie):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "event:" not in response.text


async def test_the_token_cookie_is_accepted(server: str, bus: EventBus) -> None:
    async with stream(server, headers={"Cookie": f"recallstore_token={TOKEN}"}) as reader:
        await ObservedMemoryStore(InMemoryMemoryStore(), bus).write(
            [MemoryWriteInput(scope=ADA, content="x")]
        )
        assert (await reader.next()).event == "agent.memory.write"


def test_serving_without_a_token_must_be_explicit(bus: EventBus) -> None:
    with pytest.raises(ConfigurationError, match="allow_unauthenticated"):
        create_sse_app(bus, token=None)
    with pytest.raises(ConfigurationError, match="blank"):
        create_sse_app(bus, token="  ")
    assert create_sse_app(bus, token=None, allow_unauthenticated=True) is not None


async def test_unauthenticated_app_serves_when_explicitly_allowed(bus: EventBus) -> None:
    with serve(create_sse_app(bus, token=None, allow_unauthenticated=True)) as url:
        async with stream(url, headers={}) as reader:
            await ObservedMemoryStore(InMemoryMemoryStore(), bus).write(
                [MemoryWriteInput(scope=ADA, content="x")]
            )
            assert (await reader.next()).id == "1"
        bus.close()


async def test_scope_filtered_subscriber_never_sees_another_tenants_events(
    server: str, bus: EventBus
) -> None:
    store = ObservedMemoryStore(InMemoryMemoryStore(), bus)
    params = [("scope", "tenant=acme"), ("scope", "user=ada")]
    async with stream(server, params=params) as ada_reader, stream(server) as everyone:
        await toolbox_session(store)
        bob = MemoryToolbox(store, BOB, conversation_id="conv-bob")
        await bob.call("memory_save", {"content": "Bob likes coffee"})
        await bob.call("memory_search", {"query": "coffee"})
        await store.write([MemoryWriteInput(scope={"tenant": "acme", "user": "eve"}, content="e")])
        await store.write([MemoryWriteInput(scope=ADA, content="sentinel")])
        ada_messages = await ada_reader.until(lambda m: m.id == "15")
        all_messages = await everyone.until(lambda m: m.id == "15")
    ada_scopes = [parse_event(m.data).scope for m in ada_messages]
    assert ada_scopes == [ADA] * 11
    assert [m.id for m in ada_messages] == [*(str(n) for n in range(1, 11)), "15"]
    assert len(all_messages) == 15
    assert {json.dumps(parse_event(m.data).scope) for m in all_messages} >= {json.dumps(BOB)}


async def test_bad_scope_or_last_event_id_is_a_400(server: str) -> None:
    async with httpx.AsyncClient(timeout=10.0) as client:
        bad_scope = await client.get(server + "/", headers=AUTH, params={"scope": "novalue"})
        bad_id = await client.get(server + "/", headers={**AUTH, "Last-Event-ID": "abc"})
    assert (bad_scope.status_code, bad_id.status_code) == (400, 400)
    assert "key=value" in bad_scope.text
    assert "'abc'" in bad_id.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"last_event_id": "-1"}, ">= 0"),
        ({"last_event_id": "1_000"}, "'1_000'"),
        ({"last_event_id": "+5"}, "'+5'"),
        ({"last_event_id": "\u0665"}, "an integer"),  # ARABIC-INDIC DIGIT FIVE
        ({"last_event_id": "9" * 5000}, "an integer"),
        ([("scope", "=acme")], "key=value"),
        ([("scope", "user=a"), ("scope", "user=b")], "twice"),
    ],
)
async def test_malformed_parameters_are_a_400_after_auth_and_echo_little(
    server: str, params: Any, message: str
) -> None:
    async with httpx.AsyncClient(timeout=10.0) as client:
        anonymous = await client.get(server + "/", params=params)
        refused = await client.get(server + "/", headers=AUTH, params=params)
    assert anonymous.status_code == 401  # nothing about the request is checked before auth
    assert anonymous.text == "missing or invalid token"
    assert refused.status_code == 400
    assert message in refused.text
    assert len(refused.text) < 200


async def test_keep_alive_pings_are_comment_lines(server: str) -> None:
    async with stream(server) as reader:
        ping = await reader.next(skip_comments=False)
    assert ping.event is None
    assert ping.data == ""
    assert ping.comments[0].startswith("ping")


@pytest.mark.slow
async def test_stalled_client_and_raising_listener_do_not_hold_up_a_thousand_writes(
    bus: EventBus, sqlite_store: SqliteMemoryStore
) -> None:
    listener_calls = 0

    def broken(event: object) -> None:
        nonlocal listener_calls
        listener_calls += 1
        raise RuntimeError("subscriber bug")

    bus.add_listener(broken)
    # ~4 KB events: far more than loopback socket buffers absorb for a client not reading.
    store = ObservedMemoryStore(sqlite_store, bus, include_content=True)
    app = create_sse_app(bus, token=TOKEN, max_queue=32, send_timeout=None)
    with (
        serve(app) as url,
        raw_http_request(url, "/", AUTH) as stalled,
    ):
        assert stalled.recv(12).startswith(b"HTTP/1.1 200")
        async with stream(url) as healthy:
            for n in range(1000):
                await store.write([MemoryWriteInput(scope=ADA, content=f"{n} " + "m" * 4000)])
            messages = await healthy.until(lambda m: m.id == "1000")
        await wait_for(lambda: bus.stats().subscriptions == 1)  # the healthy stream closed
        stats = bus.stats()
        (stalled_stats,) = bus.subscription_stats()
        bus.close()
    assert stats.published == 1000
    assert listener_calls == 1000
    assert stats.listener_failures == 1000
    # The stalled client's queue overflowed: its drops are counted, per client and in total.
    assert stalled_stats.dropped > 0
    assert stalled_stats.received == 1000
    assert stalled_stats.delivered + stalled_stats.dropped + stalled_stats.queued == 1000
    assert stats.dropped >= stalled_stats.dropped
    events = [m for m in messages if m.event != "gap"]
    ids = [int(m.id or 0) for m in events]
    assert ids == sorted(set(ids))
    assert ids[-1] == 1000
    missed = sum(json.loads(m.data)["missed"] for m in messages if m.event == "gap")
    assert len(events) + missed == 1000  # the healthy reader saw or was told about every event


@pytest.mark.slow
async def test_a_client_that_stops_reading_is_dropped_after_send_timeout(
    bus: EventBus,
) -> None:
    store = ObservedMemoryStore(InMemoryMemoryStore(), bus, include_content=True)
    app = create_sse_app(bus, token=TOKEN, max_queue=8, send_timeout=0.3)
    with serve(app) as url, raw_http_request(url, "/", AUTH) as stalled:
        assert stalled.recv(12).startswith(b"HTTP/1.1 200")
        await wait_for(lambda: bus.stats().subscriptions == 1)
        for n in range(2000):
            await store.write([MemoryWriteInput(scope=ADA, content=f"{n} " + "m" * 4000)])
            if bus.stats().subscriptions == 0:
                break
            await asyncio.sleep(0.002)
        await wait_for(lambda: bus.stats().subscriptions == 0)
        bus.close()


async def test_head_answers_without_leaving_a_subscription_behind(
    server: str, bus: EventBus
) -> None:
    async with httpx.AsyncClient(timeout=10.0) as client:
        response = await client.head(server + "/", headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    await wait_for(lambda: bus.stats().subscriptions == 0)
