"""The lens lists consolidation plans with their diffs: a page and JSON, read-only."""

from __future__ import annotations

import html
import json
from typing import cast

import httpx

from recallstore.consolidation import apply_plan, consolidate, kept_plans, revert_plan
from recallstore.events import ObservedMemoryStore
from recallstore.records import MemoryWriteInput
from recallstore.store import RecordChange, SupportsRevise

ANA = {"tenant": "acme", "user": "ana"}


async def _applied_plan(store: ObservedMemoryStore) -> str:
    raw = store.inner
    await raw.write(
        [
            MemoryWriteInput(scope=ANA, content="Lives in Lisbon."),
            MemoryWriteInput(scope=ANA, content="lives in lisbon <b>bold</b>"),
            MemoryWriteInput(scope=ANA, content="LIVES IN LISBON <b>bold</b>"),
        ]
    )
    plan = await consolidate(raw, ANA)
    await apply_plan(raw, plan)
    return plan.id


async def test_the_plans_page_shows_each_plan_and_its_diff(
    client: httpx.AsyncClient, store: ObservedMemoryStore
) -> None:
    empty = await client.get("/plans")
    assert empty.status_code == 200
    assert 'id="plans-empty"' in empty.text
    plan_id = await _applied_plan(store)
    page = await client.get("/plans", params={"scope": "user=ana"})
    assert page.status_code == 200
    assert f'id="plan-{plan_id}"' in page.text
    assert "applied" in page.text
    assert "duplicate of: the same text, saved again" in page.text
    assert "&lt;b&gt;bold&lt;/b&gt;" in page.text
    assert "<b>bold</b>" not in page.text
    other = await client.get("/plans", params={"scope": "user=bo"})
    assert plan_id not in other.text

    await revert_plan(store.inner, plan_id)
    reverted = await client.get("/plans")
    assert "reverted" in reverted.text


async def test_the_plans_api_gives_the_plan_and_its_state(
    client: httpx.AsyncClient, store: ObservedMemoryStore
) -> None:
    plan_id = await _applied_plan(store)
    response = await client.get("/api/plans", params={"scope": "tenant=acme"})
    assert response.status_code == 200
    (shown,) = response.json()["plans"]
    assert shown["id"] == plan_id
    assert shown["reverted_at"] is None
    assert shown["changes"] == 1
    assert shown["plan"]["operations"][0]["action"] == "duplicate"
    assert (await client.get("/api/plans", params={"scope": "=x"})).status_code == 422


async def test_plans_need_the_token(anonymous: httpx.AsyncClient) -> None:
    assert (await anonymous.get("/plans")).status_code == 401
    assert (await anonymous.get("/api/plans")).status_code == 401


async def test_a_revision_that_is_no_plan_is_named_not_a_500(
    client: httpx.AsyncClient, store: ObservedMemoryStore
) -> None:
    raw = store.inner
    (note,) = await raw.write([MemoryWriteInput(scope=ANA, content="a note")])
    await cast(SupportsRevise, raw).revise("my-rev", ANA, [RecordChange(note.id, "x")], "text")
    plan_id = await _applied_plan(store)
    page = await client.get("/plans")
    assert page.status_code == 200
    assert f'id="plan-{plan_id}"' in page.text
    assert 'id="plans-skipped"' in page.text
    assert "my-rev" in page.text
    api = await client.get("/api/plans")
    assert api.status_code == 200
    assert [shown["id"] for shown in api.json()["plans"]] == [plan_id]
    assert api.json()["skipped"] == [
        {
            "id": "my-rev",
            "reason": "not a consolidation plan (kept through revise by another caller)",
        }
    ]


async def test_a_plan_naming_a_forgotten_record_shows_ids_not_its_text(
    client: httpx.AsyncClient, store: ObservedMemoryStore
) -> None:
    plan_id = await _applied_plan(store)
    raw = store.inner
    ((plan, _),) = await kept_plans(raw)
    gone = plan.changes[0].record_id
    text = plan.records[gone].content
    assert text is not None
    await raw.delete(gone)
    page = await client.get("/plans", params={"scope": "user=ana"})
    assert page.status_code == 200
    assert f'id="plan-{plan_id}"' in page.text
    assert "(forgotten)" in page.text
    assert gone in page.text
    assert html.escape(text) not in page.text
    (shown,) = (await client.get("/api/plans")).json()["plans"]
    assert shown["forgotten"] == [gone]
    assert text not in json.dumps(shown)
