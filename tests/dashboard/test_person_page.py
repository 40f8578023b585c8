"""The person page, time travel, forgetting a person and reverting a plan, through ASGI
over a real SQLite file whose clock the test moves (``tests/dashboard/_people.py``)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import httpx
import pytest
from starlette.applications import Starlette
from tests.dashboard._people import ALICE, BOB_FACT, People, seed_people

from recallstore._forget_preview import preview_forget
from recallstore.backends.journal import SupportsJournal
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.consolidation import kept_plans
from recallstore.dashboard import create_dashboard_app
from recallstore.events import EventBus, ObservedMemoryStore
from recallstore.records import MemoryRecord, MemorySearchQuery
from recallstore.store import scope_matches
from recallstore.testing.pytest_plugin import FrozenClock

TOKEN = "lens-person-token"
PERSON = {"scope": "user=qzalice"}


@dataclass
class Lens:
    app: Starlette
    client: httpx.AsyncClient
    store: ObservedMemoryStore
    bus: EventBus
    people: People


@pytest.fixture
async def lens(tmp_path: Path) -> AsyncIterator[Lens]:
    clock = FrozenClock()
    bus = EventBus()
    async with SqliteMemoryStore(tmp_path / "memory.db", clock=clock) as raw:
        store = ObservedMemoryStore(raw, bus)
        people = await seed_people(store, clock)
        app = create_dashboard_app(store, bus, token=TOKEN)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            assert (await client.get("/", params={"token": TOKEN})).status_code == 303
            yield Lens(app, client, store, bus, people)


def _section(page: str, element_id: str) -> str:
    found = re.search(rf'<section[^>]*id="{element_id}"[^>]*>(.*?)</section>', page, re.S)
    assert found is not None, f"no section {element_id}"
    return html.unescape(found.group(1))


async def _alice(lens: Lens) -> list[MemoryRecord]:
    query = MemorySearchQuery(scope=ALICE, include_invalidated=True, include_expired=True)
    return [hit.record for hit in await lens.store.inner.search(query)]


# -- the person page ----------------------------------------------------------------------


async def test_the_person_page_shows_profile_kinds_timeline_chains_plans_events(
    lens: Lens,
) -> None:
    people = lens.people
    page = (await lens.client.get("/person", params=PERSON)).text
    assert "Name is Alice Quillfeather." in _section(page, "person-profile")
    kinds = _section(page, "person-kinds")
    assert [h for h in re.findall(r"<h3[^>]*>(\w+)", kinds)] == ["fact", "preference", "profile"]
    assert "Moved to Portoqz." in kinds
    assert "Lives in Lisbonqz." not in kinds  # superseded: not valid now
    timeline = _section(page, "person-timeline")
    assert re.findall(r"<time>([\d-]+)</time>", timeline) == [
        "2026-11-10",
        "2026-11-01",
        "2026-10-25",
    ]
    # Said a week before it was saved: the save day is marked beside it.
    lisbon = timeline[timeline.index("Lives in Lisbonqz.") :]
    assert "saved 2026-11-01" in lisbon[:600]
    assert f"superseded by {people.porto}" in re.sub(r"<[^>]+>", "", lisbon[:900])
    porto = timeline[timeline.index("Moved to Portoqz.") :]
    assert f"supersedes {people.lisbon}" in re.sub(r"<[^>]+>", "", porto[:700])
    chains = _section(page, "person-chains")
    assert chains.index(people.lisbon) < chains.index(people.porto)
    assert f'href="/plans/{people.plan_id}"' in _section(page, "person-plans")
    events = _section(page, "person-events")
    assert "supersede · 2 record(s)" in events
    assert "conversation convqzalice" in events
    assert BOB_FACT not in page
    assert 'href="/person/forget?scope=user%3Dqzalice"' in page


async def test_every_scope_chip_links_to_the_person_page(lens: Lens) -> None:
    link = 'href="/person?scope=tenant%3Dacme&amp;scope=user%3Dqzalice"'
    for path in (
        "/records?scope=user%3Dqzalice",
        f"/records/{lens.people.porto}",
        "/plans",
        f"/plans/{lens.people.plan_id}",
    ):
        assert link in (await lens.client.get(path)).text, path
    person = (await lens.client.get("/person", params=PERSON)).text
    assert 'href="/person?scope=user%3Dqzalice"' in person
    feed = (await lens.client.get("/")).text
    assert 'data-person-url="/person"' in feed
    script = Path(__file__).parents[2] / "src/recallstore/dashboard/static/lens.js"
    assert 'personUrl + "?"' in script.read_text()


async def test_the_person_page_without_a_scope_asks_for_one_and_refuses_a_bad_one(
    lens: Lens,
) -> None:
    empty = await lens.client.get("/person")
    assert empty.status_code == 200
    assert "Name a scope" in empty.text
    for scope in ("nokey", "user="):
        bad = await lens.client.get("/person", params={"scope": scope})
        assert bad.status_code == 422
        assert "<strong>scope</strong>" in bad.text


async def test_the_person_page_exports_every_record_of_the_scope_as_jsonl(lens: Lens) -> None:
    response = await lens.client.get("/person/export", params=PERSON)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert response.headers["content-disposition"].startswith("attachment;")
    records = [MemoryRecord.model_validate_json(line) for line in response.text.splitlines()]
    assert sorted(r.id for r in records) == sorted(r.id for r in await _alice(lens))
    assert len(records) == 5
    assert all(scope_matches(r.scope, ALICE) for r in records)
    assert (await lens.client.get("/person/export")).status_code == 422


# -- time travel --------------------------------------------------------------------------


async def test_as_of_shows_what_was_valid_then_and_what_changed_since(lens: Lens) -> None:
    people = lens.people
    page = (await lens.client.get("/person", params={**PERSON, "as_of": "2026-11-05"})).text
    notice = _section(page, "person-as-of-notice")
    assert "As of" in notice
    assert "2026-11-05 23:59:59 UTC" in notice  # the last instant of the day named
    saved = re.search(r'<ul id="saved-since">(.*?)</ul>', notice, re.S)
    ended = re.search(r'<ul id="ended-since">(.*?)</ul>', notice, re.S)
    assert saved is not None
    assert ended is not None
    assert people.porto in saved.group(1)
    assert people.tea_again in saved.group(1)
    assert people.lisbon not in saved.group(1)
    assert people.lisbon in ended.group(1)
    kinds = _section(page, "person-kinds")
    assert "Lives in Lisbonqz." in kinds  # valid then
    assert "Moved to Portoqz." not in kinds  # not yet saved
    bad = await lens.client.get("/person", params={**PERSON, "as_of": "the day after never"})
    assert bad.status_code == 422
    assert "<strong>as_of</strong>" in bad.text


async def test_records_and_search_travel_in_time(lens: Lens) -> None:
    people = lens.people
    search = {"scope": "user=qzalice", "q": "Lisbonqz"}
    now = (await lens.client.get("/records", params=search)).text
    assert people.lisbon not in now  # superseded today
    then = (await lens.client.get("/records", params={**search, "as_of": "2026-11-05"})).text
    assert people.lisbon in then
    assert 'id="as-of-notice"' in then
    row = then[then.index(f'href="/records/{people.lisbon}"') :]
    row = row[: row.index("</tr>")]
    assert "said" in row or "2026-10-25" in row
    assert "saved 2026-11-01" in row
    assert "status-superseded" in row  # the "Now" column
    assert "changed since" in html.unescape(then)
    api = await lens.client.get("/api/records", params={**search, "as_of": "2026-11-05T12:00:00Z"})
    assert [hit["record"]["id"] for hit in api.json()["hits"]] == [people.lisbon]
    bad = await lens.client.get("/api/records", params={"as_of": "whenever"})
    assert bad.status_code == 422
    assert bad.json()["field"] == "as_of"


async def test_the_records_chart_counts_by_the_day_said(lens: Lens) -> None:
    page = (await lens.client.get("/records", params={"scope": "user=qzalice"})).text
    chart = re.search(r'<figure class="chart" id="chart-kinds">(.*?)</figure>', page, re.S)
    assert chart is not None
    titles = [html.unescape(t) for t in re.findall(r"<title>(.*?)</title>", chart.group(1))]
    assert "said 2026-10-25 UTC: 1 fact" in titles
    assert "5 records by the day they were said" in chart.group(1)


# -- forgetting a person ------------------------------------------------------------------


async def test_the_forget_confirmation_names_what_would_go(lens: Lens) -> None:
    page = await lens.client.get("/person/forget", params=PERSON)
    assert page.status_code == 200
    preview = _section(page.text, "forget-confirm")
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", preview))
    assert "5 records: 2 fact, 2 preference, 1 profile" in text
    assert f"1 consolidation plan would keep ids only: {lens.people.plan_id}" in text
    expected = await preview_forget(lens.store.inner, {"user": "qzalice"})
    assert f"{expected.journal_erased} journal entries erased" in text
    assert expected.journal_erased
    assert expected.journal_erased > 0
    assert 'name="confirm"' in preview
    assert await _alice(lens), "looking changes nothing"


async def test_the_preview_is_what_the_forget_takes(lens: Lens) -> None:
    raw = lens.store.inner
    journal = cast(SupportsJournal, raw)
    await journal.flush_journal()
    preview = await preview_forget(raw, {"user": "qzalice"})
    before = await journal.read_journal(limit=100_000)
    assert set(preview.record_ids) == {r.id for r in await _alice(lens)}
    response = await lens.client.post(
        "/person/forget", data={"scope": "user=qzalice", "confirm": "user = qzalice"}
    )
    assert response.status_code == 303
    after = {entry.id: entry.envelope for entry in await journal.read_journal(limit=100_000)}
    changed = [entry for entry in before if after.get(entry.id) != entry.envelope]
    assert preview.journal_erased is not None
    assert preview.journal_scrubbed is not None
    assert len(changed) == preview.journal_erased + preview.journal_scrubbed
    assert not [e for e in after.values() if scope_matches(e["scope"], {"user": "qzalice"})]
    # The forget's own event is numbered after everything before it (never a reused id).
    assert max(after) > max(entry.id for entry in before)
    (plan, _), *_ = await kept_plans(raw)
    assert set(plan.forgotten) == {lens.people.tea, lens.people.tea_again}
    assert [plan.id] == list(preview.plans)


async def test_forgetting_needs_the_scope_typed_again(lens: Lens) -> None:
    for typed in ("", "user=qzalic", "yes", "tenant=acme"):
        response = await lens.client.post(
            "/person/forget", data={"scope": "user=qzalice", "confirm": typed}
        )
        assert response.status_code == 422, typed
        assert "<strong>confirm</strong>" in response.text
    assert len(await _alice(lens)) == 5


async def test_forgetting_a_person_leaves_nothing_of_theirs_in_the_lens(lens: Lens) -> None:
    response = await lens.client.post(
        "/person/forget", data={"scope": "user=qzalice", "confirm": "user=qzalice"}
    )
    assert response.status_code == 303
    location = response.headers["location"]
    assert location.startswith("/person/forgotten?records=5&kind_fact=2&kind_preference=2")
    assert "qzalice" not in location
    result = await lens.client.get(location)
    assert "5 records forgotten (2 fact, 2 preference, 1 profile)" in result.text
    assert "qzalice" not in result.text
    assert await _alice(lens) == []
    for path, params in (
        ("/person", PERSON),
        ("/records", {"invalidated": "1", "expired": "1"}),
        ("/plans", {}),
        ("/api/plans", {}),
        ("/api/events", {}),
    ):
        shown = (await lens.client.get(path, params=params)).text
        for secret in ("Quillfeather", "Lisbonqz", "Portoqz", "Gyokuroqz", "convqzalice"):
            assert secret not in shown, (path, secret)
    search = await lens.client.get("/records", params={"q": "Portoqz", "invalidated": "1"})
    assert 'table class="records"' not in search.text
    assert BOB_FACT in (await lens.client.get("/records")).text
    # The feed shows that a forget happened, not what: one delete, no scope.
    events = (await lens.client.get("/api/events")).json()["events"]
    (forget,) = [e for e in events if e["data"].get("operation") == "delete"]
    assert forget["data"]["count"] == 5
    assert forget["scope"] == {}
    assert forget["run_id"] == "dashboard"
    assert "qzalice" not in json.dumps(events)


# -- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:9999"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
async def test_forget_and_revert_refuse_another_origin(lens: Lens, headers: dict[str, str]) -> None:
    forget = await lens.client.post(
        "/person/forget",
        data={"scope": "user=qzalice", "confirm": "user=qzalice"},
        headers=headers,
    )
    assert forget.status_code == 403
    revert = await lens.client.post(
        f"/plans/{lens.people.plan_id}/revert", data={"confirm": "yes"}, headers=headers
    )
    assert revert.status_code == 403
    assert len(await _alice(lens)) == 5
    ((_, revision),) = await kept_plans(lens.store.inner)
    assert revision.reverted_at is None


async def test_the_new_routes_refuse_a_client_without_the_token(lens: Lens) -> None:
    transport = httpx.ASGITransport(app=lens.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as anonymous:
        for path in (
            "/person",
            "/person/export",
            "/person/forget",
            f"/plans/{lens.people.plan_id}",
        ):
            assert (await anonymous.get(path, params=PERSON)).status_code == 401, path
        forget = await anonymous.post(
            "/person/forget", data={"scope": "user=qzalice", "confirm": "user=qzalice"}
        )
        assert forget.status_code == 401
        revert = await anonymous.post(
            f"/plans/{lens.people.plan_id}/revert", data={"confirm": "yes"}
        )
        assert revert.status_code == 401
    assert len(await _alice(lens)) == 5
    ((_, revision),) = await kept_plans(lens.store.inner)
    assert revision.reverted_at is None


# -- plans --------------------------------------------------------------------------------


async def test_a_plan_is_reverted_from_its_page_once_confirmed(lens: Lens) -> None:
    people = lens.people
    page = (await lens.client.get(f"/plans/{people.plan_id}")).text
    assert 'id="revert-button"' in page
    assert "2026-11-10" in page
    assert "2026-11-01" in page
    unconfirmed = await lens.client.post(f"/plans/{people.plan_id}/revert", data={})
    assert unconfirmed.status_code == 422
    assert (await lens.store.inner.get(people.tea_again)).is_invalidated  # type: ignore[union-attr]
    done = await lens.client.post(f"/plans/{people.plan_id}/revert", data={"confirm": "yes"})
    assert done.status_code == 303
    assert done.headers["location"] == f"/plans/{people.plan_id}?reverted=1"
    after = (await lens.client.get(done.headers["location"])).text
    assert 'id="plan-reverted"' in after
    assert 'id="revert-button"' not in after
    restored = await lens.store.inner.get(people.tea_again)
    assert restored is not None
    assert not restored.is_invalidated
    again = await lens.client.post(f"/plans/{people.plan_id}/revert", data={"confirm": "yes"})
    assert again.status_code == 409
    missing = await lens.client.post("/plans/plan_nope/revert", data={"confirm": "yes"})
    assert missing.status_code == 404


async def test_plan_ids_in_a_reason_link_to_the_plan(lens: Lens) -> None:
    page = (await lens.client.get(f"/records/{lens.people.tea_again}")).text
    assert f'<a class="plan-id mono" href="/plans/{lens.people.plan_id}">' in page
    listing = (await lens.client.get("/plans")).text
    assert f'href="/plans/{lens.people.plan_id}"' in listing


async def test_feed_rows_and_the_recall_preview_name_the_day_said(lens: Lens) -> None:
    people = lens.people
    answer = await lens.client.get("/api/snippets", params={"id": people.lisbon})
    found = answer.json()["records"][people.lisbon]
    assert (found["said"], found["saved"]) == ("2026-10-25", "2026-11-01")
    script = Path(__file__).parents[2] / "src/recallstore/dashboard/static/lens.js"
    assert '"ref-said"' in script.read_text()
    preview = await lens.client.get("/recall", params={"scope": "user=qzalice", "text": "Lisbonqz"})
    entries = preview.text[preview.text.index('<ol class="entries">') :]
    assert "said <time" in entries


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"scope": "user=qzalice", "confirm": "user=qzalice"}', "application/json"),
        (b"scope=user%3Dqzalice&confirm=\xff\xfe", "application/x-www-form-urlencoded"),
        (b"scope=" + b"x" * 70_000, "application/x-www-form-urlencoded"),
        (b"scope=%3D&confirm=%3D", "application/x-www-form-urlencoded"),
    ],
)
async def test_forget_and_revert_refuse_a_body_they_cannot_read(
    lens: Lens, body: bytes, content_type: str
) -> None:
    headers = {"Content-Type": content_type}
    forget = await lens.client.post("/person/forget", content=body, headers=headers)
    assert forget.status_code == 422
    assert "Nothing forgotten" in forget.text or "<strong>" in forget.text
    revert = await lens.client.post(
        f"/plans/{lens.people.plan_id}/revert", content=body, headers=headers
    )
    assert revert.status_code == 422
    assert len(await _alice(lens)) == 5
    ((_, revision),) = await kept_plans(lens.store.inner)
    assert revision.reverted_at is None


async def test_a_read_only_store_forgets_and_reverts_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    clock = FrozenClock()
    async with SqliteMemoryStore(path, clock=clock) as raw:
        people = await seed_people(raw, clock)
    bus = EventBus()
    async with SqliteMemoryStore(path, read_only=True) as reader:
        app = create_dashboard_app(ObservedMemoryStore(reader, bus), bus, token=TOKEN)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            await client.get("/", params={"token": TOKEN})
            preview = await client.get("/person/forget", params=PERSON)
            assert "5 records" in re.sub(r"<[^>]+>", "", preview.text)
            forget = await client.post(
                "/person/forget", data={"scope": "user=qzalice", "confirm": "user=qzalice"}
            )
            assert forget.status_code == 503
            assert "read-only" in forget.text
            revert = await client.post(f"/plans/{people.plan_id}/revert", data={"confirm": "yes"})
            assert revert.status_code == 503
        query = MemorySearchQuery(scope=ALICE, include_invalidated=True)
        assert len(await reader.search(query)) == 5
