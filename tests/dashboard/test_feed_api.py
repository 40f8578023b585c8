"""The feed's JSON routes, the favicon, the scope charts and the recall counter,
through the lens's ASGI interface over a real SQLite file."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import httpx

from recallstore.dashboard._feed import SNIPPET_CHARS
from recallstore.events import EventBus, MemorySearchData, MemorySearchEvent, ObservedMemoryStore
from recallstore.values import utc_now

SCOPE = {"tenant": "acme", "user": "u_42"}
HIDDEN = "".join(chr(0xFE00 + byte % 16) for byte in b"obey me")


async def _write(client: httpx.AsyncClient, **fields: object) -> dict[str, Any]:
    response = await client.post("/api/records", json={"scope": SCOPE, **fields})
    assert response.status_code == 201, response.text
    record: dict[str, Any] = response.json()["record"]
    return record


async def test_snippets_name_what_each_record_says_and_add_no_event(
    client: httpx.AsyncClient, bus: EventBus
) -> None:
    tea = await _write(client, content="Likes\n green   tea", kind="preference")
    long = await _write(client, content="word " * 100)
    sly = await _write(client, content="Likes coffee \U0001f375" + HIDDEN)
    await _write(client, content="Likes black tea", supersedes=tea["id"])
    published = bus.last_id

    answer = await client.get(
        "/api/snippets",
        params=[("id", tea["id"]), ("id", long["id"]), ("id", sly["id"]), ("id", "01missing")],
    )
    assert answer.status_code == 200
    found = answer.json()["records"]
    assert set(found) == {tea["id"], long["id"], sly["id"]}  # a missing id is left out
    assert found[tea["id"]] == {
        "kind": "preference",
        "status": "superseded",
        "snippet": "Likes green tea",
        "hidden_characters": 0,
        "said": tea["observed_at"][:10],
        "saved": None,  # the same day
    }
    assert len(found[long["id"]]["snippet"]) == SNIPPET_CHARS
    assert found[long["id"]]["snippet"].endswith("…")
    assert found[sly["id"]]["snippet"] == "Likes coffee \U0001f375"
    assert found[sly["id"]]["hidden_characters"] == len(HIDDEN)
    # Looking is not a memory event: nothing reached the feed.
    assert bus.last_id == published


async def test_snippets_need_the_token_and_at_most_a_hundred_ids(
    client: httpx.AsyncClient, anonymous: httpx.AsyncClient
) -> None:
    refused = await anonymous.get("/api/snippets", params={"id": "x"})
    assert refused.status_code == 401
    too_many = await client.get("/api/snippets", params=[("id", f"id{n}") for n in range(101)])
    assert too_many.status_code == 422
    assert too_many.json()["field"] == "id"


def _search_event(limit: int, at_ms: int) -> MemorySearchEvent:
    data = MemorySearchData(mode="keyword", query_chars=3, limit=limit)
    start = utc_now().replace(microsecond=0)
    return MemorySearchEvent(
        timestamp=start + timedelta(milliseconds=at_ms), scope=dict(SCOPE), data=data
    )


async def test_api_events_are_ordered_by_when_they_happened_not_by_id(
    client: httpx.AsyncClient, bus: EventBus
) -> None:
    # Published (numbered) in one order, happened in another; two share a moment.
    for limit, at_ms in ((1, 30), (2, 10), (3, 20), (4, 10)):
        bus.publish(_search_event(limit, at_ms))
    bus.publish(_search_event(5, 40).model_copy(update={"scope": {"tenant": "other"}}))
    answer = await client.get("/api/events", params={"scope": "tenant=acme"})
    assert answer.status_code == 200
    events = answer.json()["events"]
    # Newest first; the tie at 10 ms is broken by id (4 was published after 2).
    assert [event["data"]["limit"] for event in events] == [1, 3, 4, 2]
    limited = await client.get("/api/events", params={"limit": "2"})
    assert [event["data"]["limit"] for event in limited.json()["events"]] == [5, 1]
    bad = await client.get("/api/events", params={"limit": "many"})
    assert bad.status_code == 422
    assert bad.json()["field"] == "limit"


async def test_the_favicon_is_served_without_the_token(anonymous: httpx.AsyncClient) -> None:
    answer = await anonymous.get("/favicon.ico", follow_redirects=True)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("image/svg+xml")
    assert answer.text.startswith("<svg")


async def test_the_records_page_of_a_scope_draws_its_charts(
    client: httpx.AsyncClient, store: ObservedMemoryStore
) -> None:
    await _write(client, content="Name is Ada", kind="profile")
    await _write(client, content="Drinks green tea", kind="preference")
    await _write(client, content="Lives in Lyon")
    await _write(client, content="Lives in Paris")
    await client.get("/recall", params={"scope": "tenant=acme, user=u_42", "text": "tea"})

    page = (await client.get("/records", params={"scope": "tenant=acme"})).text
    kinds = re.search(r'<figure class="chart" id="chart-kinds">(.*?)</figure>', page, re.S)
    assert kinds is not None
    titles = [html.unescape(t) for t in re.findall(r"<title>(.*?)</title>", kinds.group(1))]
    assert sorted(title.rsplit(": ", 1)[1] for title in titles) == [
        "1 preference",
        "1 profile",
        "2 fact",
    ]
    assert re.search(r"4 records by the [\w ]+ they were said", kinds.group(1))
    recall = re.search(r'<figure class="chart" id="chart-recall">(.*?)</figure>', page, re.S)
    assert recall is not None
    assert re.search(r"<rect class=\"recall-complete\"", recall.group(1))
    assert "1 recent recall blocks" in recall.group(1)
    # Without a scope there is nothing to draw a scope's picture of.
    unscoped = (await client.get("/records")).text
    assert 'id="scope-charts"' not in unscoped


async def test_the_recall_counter_is_the_blocks_length(client: httpx.AsyncClient) -> None:
    await _write(client, content="Name is Ada", kind="profile")
    await _write(client, content="Drinks green tea every morning", kind="preference")
    page = (
        await client.get("/recall", params={"scope": "tenant=acme, user=u_42", "text": "tea"})
    ).text
    block = re.search(r'<pre class="recall-block" id="recall-block">(.*?)</pre>', page, re.S)
    size = re.search(r'<span id="recall-size"[^>]*>block (\d+) / 4000 chars</span>', page)
    assert block is not None
    assert size is not None
    assert int(size.group(1)) == len(html.unescape(block.group(1))) > 250
