"""The lens and time: the records browser filters by when things were said, the record
page shows every time a record carries."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path

import httpx

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.dashboard import create_dashboard_app
from recallstore.events import EventBus, ObservedMemoryStore
from recallstore.records import MemoryWriteInput
from recallstore.testing.pytest_plugin import FrozenClock

SCOPE = {"tenant": "acme", "user": "u_42"}


async def _two_records(store: ObservedMemoryStore) -> tuple[str, str]:
    old, new = await store.write(
        [
            MemoryWriteInput(
                scope=SCOPE,
                content="kettle talk in 2024",
                observed_at=datetime(2024, 5, 2, tzinfo=UTC),
            ),
            MemoryWriteInput(scope=SCOPE, content="kettle talk today"),
        ]
    )
    return old.id, new.id


async def test_the_records_browser_filters_by_an_observed_window(
    client: httpx.AsyncClient, store: ObservedMemoryStore
) -> None:
    old, new = await _two_records(store)
    everything = await client.get("/records", params={"scope": "user=u_42"})
    assert old in everything.text
    assert new in everything.text
    may = await client.get(
        "/records", params={"scope": "user=u_42", "since": "2024-05", "until": "2024-05"}
    )
    assert may.status_code == 200
    assert old in may.text
    assert new not in may.text
    assert 'name="since" value="2024-05"' in may.text
    today = await client.get(
        "/records", params={"scope": "user=u_42", "q": "kettle", "since": "today"}
    )
    assert new in today.text
    assert old not in today.text


async def test_an_unreadable_window_is_a_422_naming_the_parameter(
    client: httpx.AsyncClient, store: ObservedMemoryStore
) -> None:
    await _two_records(store)
    response = await client.get("/records", params={"scope": "user=u_42", "until": "someday"})
    assert response.status_code == 422
    assert "until" in response.text
    assert "someday" in html.unescape(response.text)


async def test_the_record_page_shows_observed_created_expiry_and_invalidation(
    client: httpx.AsyncClient, store: ObservedMemoryStore
) -> None:
    old, new = await _two_records(store)
    await store.invalidate(old, "moved on")
    page = (await client.get(f"/records/{old}")).text
    for label in ("Said", "Saved", "Expires", "Invalidated"):
        assert f"<dt>{label}</dt>" in page
    assert "2024-05-02" in page
    assert "moved on" in page
    same = (await client.get(f"/records/{new}")).text
    assert "(when saved)" in same


async def test_the_api_writes_and_filters_by_observed_time(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/records",
        json={
            "scope": SCOPE,
            "content": "kettle via the api",
            "observed_at": "2024-05-02T08:00:00Z",
        },
    )
    assert response.status_code == 201, response.text
    record = response.json()["record"]
    assert record["observed_at"] == "2024-05-02T08:00:00.000000Z"
    found = await client.get(
        "/api/records", params={"scope": "user=u_42", "since": "2024-05-02", "until": "2024-05-02"}
    )
    assert [hit["record"]["id"] for hit in found.json()["hits"]] == [record["id"]]
    assert (
        await client.get("/api/records", params={"scope": "user=u_42", "since": "2024-05-03"})
    ).json()["hits"] == []


async def test_the_window_is_read_at_the_stores_clock(tmp_path: Path) -> None:
    """A store standing in June 2024: the lens's "last week" is that store's last week
    (issue 36 item 7: one store, one "now"), on the page and in the API."""
    bus = EventBus()
    clock = FrozenClock(datetime(2024, 6, 12, 9, tzinfo=UTC))  # last week: June 3 to 10
    async with SqliteMemoryStore(tmp_path / "m.db", clock=clock) as raw:
        store = ObservedMemoryStore(raw, bus)
        old, new = await store.write(
            [
                MemoryWriteInput(
                    scope=SCOPE,
                    content="kettle in June",
                    observed_at=datetime(2024, 6, 5, tzinfo=UTC),
                ),
                MemoryWriteInput(scope=SCOPE, content="kettle today"),
            ]
        )
        app = create_dashboard_app(store, bus, token="lens-token")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            assert (await client.get("/", params={"token": "lens-token"})).status_code == 303
            window = {"scope": "user=u_42", "since": "last week", "until": "last week"}
            api = await client.get("/api/records", params=window)
            assert [hit["record"]["id"] for hit in api.json()["hits"]] == [old.id]
            page = await client.get("/records", params=window)
            assert old.id in page.text
            assert new.id not in page.text
