"""The learning page over real HTTP: candidates with evidence, approve / reject / demote
through the host's gate and the lens's token and origin rules, the ledger, the preview."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from tests.cli.test_reads_leave_no_trace import fingerprint
from tests.cli.test_serve_command import TOKEN, serving
from tests.dashboard._learning_world import ANA, GATE, World, seed

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.dashboard import create_dashboard_app
from recallstore.events import EventBus
from recallstore.learning import assemble_learned
from recallstore.records import MemoryTarget
from recallstore.store import SupportsPromotion

SCOPE_TEXT = "tenant=acme, user=ana"
SAME_ORIGIN = {"Origin": "http://127.0.0.1", "Sec-Fetch-Site": "same-origin"}


@pytest.fixture
async def learning_store() -> AsyncIterator[InMemoryMemoryStore]:
    async with InMemoryMemoryStore() as store:
        yield store


@pytest.fixture
async def world(learning_store: InMemoryMemoryStore) -> World:
    return await seed(learning_store)


@pytest.fixture
def lens_bus() -> EventBus:
    return EventBus()


@pytest.fixture
async def lens(
    learning_store: InMemoryMemoryStore, token: str, lens_bus: EventBus
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_dashboard_app(learning_store, lens_bus, token=token, gate=GATE)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        assert (await client.get("/", params={"token": token})).status_code == 303
        yield client


def _form(record_id: str, **fields: str) -> dict[str, str]:
    return {"scope": SCOPE_TEXT, "record_id": record_id, **fields}


async def test_candidates_show_their_evidence_and_the_gate_verdict(lens, world: World) -> None:
    page = await lens.get("/learning", params={"scope": SCOPE_TEXT})
    assert page.status_code == 200
    text = page.text
    assert f'id="candidate-{world.lesson.id}"' in text
    assert text.count("user: Never book me a flight before 9 am.") == 3  # one quote each
    assert "3 support(s) from 3 conversation(s)" in text
    weak = text.split(f'id="candidate-{world.weak.id}"', 1)[1].split("</article>", 1)[0]
    assert "The gate would refuse it" in weak
    assert "2 distinct conversation(s); the gate asks for 3" in weak
    assert "approve-form" not in weak
    assert "no captured turn of its conversations shares its words" in weak
    assert 'id="preview-empty"' in text


async def test_approve_then_demote_restores_the_prompt(
    lens, world: World, learning_store: InMemoryMemoryStore, lens_bus: EventBus
) -> None:
    before = await assemble_learned(learning_store, ANA)
    assert before.block is None
    approve = _form(world.lesson.id, section="heuristic", approver="ana's coach", reason="ok")
    answer = await lens.post("/learning/promote", data=approve, headers=SAME_ORIGIN)
    assert answer.status_code == 303, answer.text
    learned = await assemble_learned(learning_store, ANA)
    assert learned.block is not None
    assert learned.source_of(world.lesson.id) == ("c-1", "c-2", "c-3")
    page = (await lens.get("/learning", params={"scope": SCOPE_TEXT})).text
    assert f'class="learned-line" data-record-id="{world.lesson.id}"' in page
    shown = page.split('<pre class="recall-block" id="learned-block">', 1)[1].split("</pre>")[0]
    assert html.unescape(re.sub(r"<[^>]+>", "", shown)) == learned.block  # byte for byte
    for conversation in ("c-1", "c-2", "c-3"):
        assert f"id={conversation}" in page.split('id="learned-sources"', 1)[1]
    assert 'data-action="promote"' in page
    assert "approved by ana&#39;s coach" in page

    demote = await lens.post(
        "/learning/demote", data=_form(world.lesson.id, reason="changed"), headers=SAME_ORIGIN
    )
    assert demote.status_code == 303
    assert (await assemble_learned(learning_store, ANA)).block is None
    page = (await lens.get("/learning", params={"scope": SCOPE_TEXT})).text
    assert 'id="preview-empty"' in page
    assert page.index('data-action="demote"') < page.index('data-action="promote"')
    learns = [e for e in lens_bus.replay() if e.type == "agent.memory.learn"]
    assert [(e.data.action, e.run_id) for e in learns] == [  # type: ignore[attr-defined]
        ("promote", "dashboard"),
        ("demote", "dashboard"),
    ]


async def test_the_gate_holds_a_forged_approval_and_a_cross_site_post_changes_nothing(
    lens, world: World, learning_store: InMemoryMemoryStore
) -> None:
    forged = _form(world.weak.id, section="heuristic", approver="x", reason="please")
    refused = await lens.post("/learning/promote", data=forged, headers=SAME_ORIGIN)
    assert refused.status_code == 409
    assert "the gate refused it" in refused.text
    cross = _form(world.lesson.id, section="heuristic", approver="x", reason="r")
    for headers in ({"Origin": "http://127.0.0.1:9999"}, {"Sec-Fetch-Site": "cross-site"}):
        answer = await lens.post("/learning/promote", data=cross, headers=headers)
        assert answer.status_code == 403
    no_approver = _form(world.lesson.id, section="heuristic", approver=" ", reason="r")
    assert (await lens.post("/learning/promote", data=no_approver)).status_code == 422
    other_scope = {**cross, "scope": "tenant=acme, user=bo"}
    assert (await lens.post("/learning/promote", data=other_scope)).status_code == 404
    assert isinstance(learning_store, SupportsPromotion)
    assert await learning_store.promotions(ANA) == []
    assert await learning_store.ledger(ANA, record_id=world.lesson.id) == []


async def test_reject_invalidates_the_note_and_the_conversation_page_shows_its_turns(
    lens, world: World, learning_store: InMemoryMemoryStore, lens_bus: EventBus
) -> None:
    answer = await lens.post(
        "/learning/reject", data=_form(world.weak.id, reason="guessed"), headers=SAME_ORIGIN
    )
    assert answer.status_code == 303
    rejected = await learning_store.get(world.weak.id)
    assert rejected is not None
    assert rejected.invalid_reason == "rejected as a lesson in the memory lens: guessed"
    changes = [e for e in lens_bus.replay() if e.type == "agent.memory.write"]
    assert [e.run_id for e in changes] == ["dashboard"]  # the feed shows the lens's change
    page = await lens.get("/learning/conversation", params={"scope": SCOPE_TEXT, "id": "c-2"})
    assert page.status_code == 200
    turns = page.text.split('id="conversation-turns"', 1)[1]
    assert turns.index("user: Plan a trip to Rome.") < turns.index("user: Never book me")


async def test_without_the_token_there_is_no_learning_page(
    learning_store: InMemoryMemoryStore, token: str
) -> None:
    app = create_dashboard_app(learning_store, EventBus(), token=token)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        assert (await client.get("/learning")).status_code == 401
        assert (await client.post("/learning/promote", data={})).status_code == 401


@pytest.mark.slow
def test_looking_at_learning_leaves_the_file_byte_identical(tmp_path: Path) -> None:
    """Operator reads leave no trace: the learning page of `recallstore serve` over a
    SQLite file that learned something (a promotion, a ledger) changes no byte of it."""
    path = tmp_path / "memory.db"

    async def learn() -> World:
        async with SqliteMemoryStore(path) as store:
            world = await seed(store)
            target = MemoryTarget(section="background")
            await store.promote(
                ANA, world.lesson.id, target, gate=GATE, actor="host", reason="r", approved_by="p"
            )
            return world

    world = asyncio.run(learn())
    before = fingerprint(path)
    with serving(path, "--token", TOKEN) as (address, server):
        base = address.split("/?")[0]
        with httpx.Client(base_url=base, timeout=10, follow_redirects=True) as client:
            assert client.get(f"/?token={TOKEN}").status_code == 200
            page = client.get("/learning", params={"scope": SCOPE_TEXT})
            assert page.status_code == 200
            assert f'class="learned-line" data-record-id="{world.lesson.id}"' in page.text
            turns = client.get("/learning/conversation", params={"scope": SCOPE_TEXT, "id": "c-1"})
            assert turns.status_code == 200
    assert server.returncode == 0
    assert fingerprint(path) == before
