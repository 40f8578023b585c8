"""The operator's tools in a real Chromium over ``recallstore serve``: the person page,
time travel, reverting a plan, and forgetting a person — after which nothing of theirs
is left on any page or in the file's bytes (the S24 raw scan, driven from the UI).

The file is written first by a store whose clock stands in November 2026
(``tests/dashboard/_people.py``); then ``recallstore serve`` opens it, as an operator
would, with its journal feeding the live feed. Screenshots at 1280 px are listed in the
test summary (``screenshot: <path>``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from tests.dashboard._people import ALICE_SECRETS, BOB_FACT, People, seed_people
from tests.dashboard.conftest import CHROMIUM_ARGS, WAIT_MS, _missing
from tests.dashboard.test_browser import _other_local_site
from tests.dashboard.test_feed_order import _env

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.testing.erasure import stored_bytes_of
from recallstore.testing.pytest_plugin import FrozenClock

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

TOKEN = "lens-person-browser-test"
SHOWN_SECRETS = ("Quillfeather", "Lisbonqz", "Portoqz", "Gyokuroqz", "convqzalice", "qzalice")


def _prepare(db: Path) -> People:
    async def seed() -> People:
        clock = FrozenClock()
        async with SqliteMemoryStore(db, clock=clock) as store:
            return await seed_people(store, clock)

    return asyncio.run(seed())


def _serve(db: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "recallstore", "serve", "--db", str(db)]
    server = subprocess.Popen(
        [*command, "--port", "0", "--token", TOKEN],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    assert found, f"serve printed {line!r}"
    return server, f"http://127.0.0.1:{found.group(1)}"


def _journaled_lens_calls(db: Path) -> list[str]:
    async def read() -> list[str]:
        async with SqliteMemoryStore(db) as store:
            entries = await store.read_journal(limit=10_000)
        return [
            str(entry.envelope["type"]).removeprefix("agent.memory.")
            for entry in entries
            if entry.envelope["run_id"] == "dashboard"
        ]

    return asyncio.run(read())


def _file_bytes(db: Path) -> bytes:
    async def scan() -> bytes:
        async with SqliteMemoryStore(db) as store:
            found = await stored_bytes_of(store)
        assert found is not None
        return found

    return asyncio.run(scan())


@pytest.mark.slow
def test_person_page_time_travel_plan_revert_and_forgetting_a_person(
    chromium: str, tmp_path: Path, report_screenshot: Callable[[Path], None]
) -> None:
    try:
        from playwright import sync_api
    except ImportError:
        _missing("the playwright package is not installed")
    expect = sync_api.expect
    db = tmp_path / "people.db"
    people = _prepare(db)
    server, url = _serve(db)
    shots: list[Path] = []

    def shoot(page: sync_api.Page, name: str) -> None:
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280, name
        shots.append(tmp_path / f"{name}.png")
        page.screenshot(path=str(shots[-1]), full_page=True, animations="disabled")

    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, args=CHROMIUM_ARGS, timeout=60_000
            )
            try:
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                context.set_default_timeout(WAIT_MS)
                expect.set_options(timeout=WAIT_MS)
                page = context.new_page()

                # The lens's own searches and recall previews show in its feed, marked.
                page.goto(f"{url}/?token={TOKEN}")
                expect(page.locator("#feed-status")).to_have_attribute("data-state", "connected")
                browse = context.new_page()
                browse.goto(
                    f"{url}/records?" + urlencode({"scope": "user=qzalice", "q": "Portoqz"})
                )
                expect(browse.locator("table.records tbody tr")).to_have_count(1)
                recall = {"scope": "user=qzalice", "text": "Moved to Portoqz?"}
                browse.goto(f"{url}/recall?" + urlencode(recall))
                expect(browse.locator("#recall-block")).to_contain_text("Portoqz")
                browse.close()
                own = page.locator("#feed .event.lens")
                expect(own.and_(page.locator('[data-type="agent.memory.recall"]'))).to_have_count(1)
                searches = own.and_(page.locator('[data-type="agent.memory.search"]'))
                expect(searches.first).to_contain_text("lens")
                expect(page.locator("#feed .event").first).to_have_attribute(
                    "data-type", "agent.memory.recall"
                )
                shoot(page, "lens-feed-own-reads")
                # A reason naming a plan (shown with --include-content) links to it, as text.
                href = page.evaluate(
                    """(plan) => {
                      const item = window.RecallstoreLens.renderEvent({
                        type: "agent.memory.write", id: 0, scope: {},
                        data: {operation: "invalidate", count: 1,
                               reason: "consolidation " + plan + ": <b>dup</b>"}});
                      document.getElementById("feed").prepend(item);
                      const found = [item.querySelector("a.plan-id").getAttribute("href"),
                                     item.querySelectorAll("b").length];
                      item.remove();
                      return found;
                    }""",
                    people.plan_id,
                )
                assert href == [f"/plans/{people.plan_id}", 0]

                # From a scope chip in the live feed to the person page.
                chip = page.locator('#feed a.scope-link[href*="qzalice"]').first
                expect(chip).to_be_visible()
                chip.click()
                expect(page).to_have_url(re.compile(r"/person\?scope=.*qzalice"))
                expect(page.locator("#person-profile")).to_contain_text("Alice Quillfeather")
                expect(page.locator("#person-kinds h3")).to_have_count(3)
                timeline = page.locator("#person-timeline")
                expect(timeline.locator("h3.timeline-day")).to_have_text(
                    ["2026-11-10", "2026-11-01", "2026-10-25"]
                )
                lisbon = timeline.locator("li.timeline-entry", has_text="Lives in Lisbonqz.")
                expect(lisbon).to_contain_text("saved 2026-11-01")
                expect(lisbon).to_contain_text("superseded by")
                expect(page.locator("#person-chains ol.chain")).to_have_count(2)
                expect(
                    page.locator(f'#person-plans a[href="/plans/{people.plan_id}"]')
                ).to_be_visible()
                expect(page.locator("#person-events li").first).to_be_visible()
                shoot(page, "lens-person")

                with page.expect_download() as download:
                    page.click("#person-export")
                lines = Path(download.value.path()).read_text().splitlines()
                assert sorted(json.loads(line)["id"] for line in lines) == sorted(
                    [people.profile, people.lisbon, people.porto, people.tea, people.tea_again]
                )

                # Time travel: what memory held on 5 November, and what changed since.
                page.fill("#person-as-of", "2026-11-05")
                page.click("#person form.filters button[type=submit]")
                notice = page.locator("#person-as-of-notice")
                expect(notice).to_contain_text("As of 2026-11-05 23:59:59 UTC")
                expect(notice.locator("#saved-since li")).to_have_count(2)
                expect(notice.locator("#ended-since")).to_contain_text("Lives in Lisbonqz.")
                expect(page.locator("#person-kinds")).to_contain_text("Lives in Lisbonqz.")
                expect(page.locator("#person-kinds")).not_to_contain_text("Portoqz")
                shoot(page, "lens-person-as-of")
                search = {"scope": "user=qzalice", "q": "Lisbonqz", "as_of": "2026-11-05"}
                page.goto(f"{url}/records?" + urlencode(search))
                expect(page.locator("table.records tbody tr")).to_have_count(1)
                expect(page.locator("#as-of-notice")).to_contain_text("1 of them changed since")
                expect(page.locator("table.records tbody tr")).to_contain_text("superseded")
                shoot(page, "lens-records-as-of")

                # Reverting a plan from its page, once confirmed.
                page.goto(f"{url}/person?scope=user%3Dqzalice")
                page.locator(f'#person-plans a[href="/plans/{people.plan_id}"]').click()
                expect(page.locator("#plan-state")).to_have_text("applied")
                page.check("#revert-confirm")
                shoot(page, "lens-plan-revert-confirm")
                page.click("#revert-button")
                expect(page.locator("#plan-reverted")).to_be_visible()
                expect(page.locator("#plan-state")).to_contain_text("reverted")
                expect(page.locator("#revert-button")).to_have_count(0)
                shoot(page, "lens-plan-reverted")

                # Another local program's page cannot forget anyone through the browser.
                attack = f"""<!doctype html><title>other</title>
                <form method="post" action="{url}/person/forget">
                <input name="scope" value="user=qzalice"><input name="confirm" value="user=qzalice">
                </form><script>document.forms[0].submit();</script>"""
                with _other_local_site(attack) as other:
                    page.goto(other)
                    expect(page.locator("body")).to_contain_text("another origin")

                # Forgetting the person: the confirmation names what goes, the scope is typed.
                page.goto(f"{url}/person?scope=user%3Dqzalice")
                page.click("#forget-start")
                expect(page.locator("#forget-records")).to_contain_text(
                    "5 records: 2 fact, 2 preference, 1 profile"
                )
                expect(page.locator("#forget-plans")).to_contain_text(people.plan_id)
                expect(page.locator("#forget-journal")).to_contain_text("journal entr")
                page.fill("#forget-typed", "user=qzalice")
                shoot(page, "lens-forget-confirm")
                page.fill("#forget-typed", "user=qzalic")
                page.click("#forget-button")
                expect(page.locator(".error-box")).to_contain_text("type the scope exactly")
                expect(page.locator("#forget-records")).to_contain_text("5 records")
                page.fill("#forget-typed", "user=qzalice")
                page.click("#forget-button")
                summary = page.locator("#forgotten-summary")
                expect(summary).to_contain_text("5 records forgotten (2 fact, 2 preference")
                shoot(page, "lens-forget-result")

                # The feed shows that a forget happened, never what.
                page.goto(f"{url}/")
                forget_row = page.locator("#feed .event", has_text="delete · 5 records deleted")
                expect(forget_row).to_have_count(1)
                expect(forget_row).to_contain_text("dashboard")
                expect(forget_row.locator("a.record-id").first).to_contain_text("no longer stored")
                expect(page.locator("#feed")).not_to_contain_text("qzalice")
                shoot(page, "lens-forget-feed")
                for place in (
                    "/",
                    "/person?scope=user%3Dqzalice",
                    "/records?invalidated=1&expired=1",
                    "/records?q=Portoqz&invalidated=1",
                    "/plans",
                    f"/plans/{people.plan_id}",
                ):
                    page.goto(url + place)
                    page.wait_for_load_state("networkidle")
                    text = page.locator("main").inner_text()
                    for secret in SHOWN_SECRETS:
                        if place.startswith("/person") and secret == "qzalice":
                            continue  # the scope typed in the address
                        if place.startswith("/records?q") and secret == "Portoqz":
                            continue  # the words typed in the search box
                        assert secret not in text, (place, secret)
                page.goto(url + "/person?scope=user%3Dqzalice")
                expect(page.locator("#person")).to_contain_text("0 records in all")
                page.goto(url + "/records?q=Portoqz&invalidated=1")
                expect(page.locator("table.records")).to_have_count(0)
            except Exception:
                for number, open_page in enumerate(context.pages):
                    failure = tmp_path / f"lens-person-failure-{number}.png"
                    with contextlib.suppress(sync_api.Error):
                        open_page.screenshot(path=str(failure), full_page=True)
                        report_screenshot(failure)
                raise
            finally:
                browser.close()
        with httpx.Client(base_url=url, timeout=10) as api:
            bob = api.get(
                "/api/records",
                params={"scope": "user=bo"},
                headers={"Authorization": f"Bearer {TOKEN}"},
            )
        assert [hit["record"]["content"] for hit in bob.json()["hits"]] == [BOB_FACT]
    finally:
        server.terminate()
        server.wait(timeout=30)

    # The lens's reads were never journaled: its only journaled calls are its changes.
    # (The forget's; the revert's were of her scope and went with her.)
    assert _journaled_lens_calls(db) == ["write"]

    # The file's bytes (with its -wal and -shm) hold nothing of hers; Bob's fact stays.
    blob = _file_bytes(db)
    assert BOB_FACT.encode() in blob, "the raw scan must see what is kept"
    assert [secret for secret in ALICE_SECRETS if secret.encode() in blob] == []
    for shot in shots:
        assert shot.stat().st_size > 10_000, f"{shot} looks empty"
        report_screenshot(shot)
