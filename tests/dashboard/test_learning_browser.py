"""The learning page in a real headless Chromium, against a real server: approve and
demote work, the prompt preview links each learned line to its record and
conversations, and a page of another local program cannot promote anything.

Playwright drives Debian's Chromium; without it the test is skipped, unless
RECALLSTORE_REQUIRE_BROWSER=1 makes a missing browser a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import uvicorn
from tests.dashboard._learning_world import GATE, World, seed
from tests.dashboard.conftest import CHROMIUM_ARGS, WAIT_MS, _missing
from tests.dashboard.test_browser import _noting_answers, _other_local_site

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.dashboard import create_dashboard_app
from recallstore.events import EventBus

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

SCOPE_TEXT = "tenant=acme, user=ana"


class LearningLens:
    """The lens over a seeded in-memory store (it has the promote extension), served by
    uvicorn on 127.0.0.1 in a background thread; the store lives on that thread's loop."""

    def __init__(self) -> None:
        self.token = "lens-" + secrets.token_urlsafe(16)
        self.answers: list[tuple[str, str, int]] = []
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.world: World | None = None
        self._server: uvicorn.Server | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="learning-lens", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            self._failure = exc
            self._ready.set()

    async def _serve(self) -> None:
        async with InMemoryMemoryStore() as store:
            self.world = await seed(store)
            bus = EventBus()
            app = create_dashboard_app(store, bus, token=self.token, gate=GATE)
            config = uvicorn.Config(
                _noting_answers(app, self.answers),
                log_level="warning",
                lifespan="off",
                timeout_graceful_shutdown=3,
            )
            self._server = uvicorn.Server(config)
            task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
            while not self._server.started and not task.done():  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            self._ready.set()
            await task
            bus.close()

    def __enter__(self) -> LearningLens:
        self._thread.start()
        if not self._ready.wait(timeout=30) or self._failure is not None:
            self.__exit__()
            raise RuntimeError(f"the lens server did not start: {self._failure!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(timeout=30)
        self._socket.close()
        assert not self._thread.is_alive(), "the lens server did not stop"


@pytest.fixture
def learning_lens() -> Iterator[LearningLens]:
    with LearningLens() as lens:
        yield lens


def test_approve_and_demote_in_the_browser_with_a_linked_prompt_preview(
    chromium: str,
    learning_lens: LearningLens,
    tmp_path: Path,
    report_screenshot: Callable[[Path], None],
) -> None:
    try:
        from playwright import sync_api
    except ImportError:
        _missing("the playwright package is not installed")
    expect = sync_api.expect
    lens = learning_lens
    assert lens.world is not None
    lesson = lens.world.lesson.id
    shots = [tmp_path / f"learning-{name}.png" for name in ("candidates", "learned", "demoted")]
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=CHROMIUM_ARGS, timeout=60_000
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 1000})
            context.set_default_timeout(WAIT_MS)
            expect.set_options(timeout=WAIT_MS)
            page = context.new_page()
            page.goto(f"{lens.url}/?token={lens.token}")
            page.goto(f"{lens.url}/learning?scope={quote(SCOPE_TEXT)}")
            candidate = page.locator(f"#candidate-{lesson}")
            expect(candidate.locator(".evidence li")).to_have_count(3)
            expect(candidate).to_contain_text("3 support(s) from 3 conversation(s)")
            weak = page.locator(f"#candidate-{lens.world.weak.id}")
            expect(weak.locator(".gate-refusals")).to_contain_text("the gate asks for 3")
            expect(weak.locator(".approve-form")).to_have_count(0)
            expect(page.locator("#preview-empty")).to_be_visible()
            page.screenshot(path=str(shots[0]), full_page=True, animations="disabled")

            # Approve: a person's approval, the host's gate decides.
            candidate.locator("select[name=section]").select_option("heuristic")
            candidate.locator("input[name=approver]").fill("Ana's coach")
            candidate.get_by_role("button", name="Approve").click()
            expect(page.locator(f"#promoted-{lesson}")).to_be_visible()
            line = page.locator(f"#learned-block a.learned-line[data-record-id='{lesson}']")
            expect(line).to_have_count(1)
            expect(line).to_contain_text("Ana never flies before 9 am.")
            expect(line).to_contain_text("learned from conversations c-1, c-2, c-3")
            assert line.get_attribute("href") == f"/records/{lesson}"
            block = page.locator("#learned-block").inner_text()
            assert block.startswith("<learned_instructions>")
            assert block.rstrip().endswith("\n</learned_instructions>")
            assert "\nJudgment heuristics:\n- Ana never flies before 9 am. [learned" in block
            source = page.locator(f".learned-source[data-record-id='{lesson}']")
            expect(source.locator("a.conversation-link")).to_have_text(["c-1", "c-2", "c-3"])
            expect(page.locator("#ledger-rows .ledger-row").first).to_have_attribute(
                "data-action", "promote"
            )
            page.screenshot(path=str(shots[1]), full_page=True, animations="disabled")

            # Each learned line leads to its conversations and its record.
            source.locator("a.conversation-link", has_text="c-2").click()
            expect(page.locator("#conversation-turns .turn")).to_have_count(3)
            expect(page.locator("#conversation-turns")).to_contain_text("Plan a trip to Rome.")
            page.go_back()
            page.locator(f"#learned-block a.learned-line[data-record-id='{lesson}']").click()
            expect(page).to_have_url(f"{lens.url}/records/{lesson}")
            page.go_back()

            # Demote: the learned section is gone again.
            page.locator(f"#promoted-{lesson}").get_by_role("button", name="Demote").click()
            expect(page.locator("#preview-empty")).to_be_visible()
            expect(page.locator("#ledger-rows .ledger-row")).to_have_count(2)
            expect(page.locator("#ledger-rows .ledger-row").first).to_have_attribute(
                "data-action", "demote"
            )
            page.screenshot(path=str(shots[2]), full_page=True, animations="disabled")
        except Exception:
            for number, open_page in enumerate(
                browser.contexts[0].pages if browser.contexts else ()
            ):
                failure = tmp_path / f"learning-failure-{number}.png"
                with contextlib.suppress(sync_api.Error):
                    open_page.screenshot(path=str(failure), animations="disabled")
                    report_screenshot(failure)
            raise
        finally:
            browser.close()
    assert ("POST", "/learning/promote", 303) in lens.answers
    assert ("POST", "/learning/demote", 303) in lens.answers
    for shot in shots:
        assert shot.stat().st_size > 10_000, f"{shot} looks empty"
        report_screenshot(shot)


def test_a_page_on_another_local_port_cannot_promote(
    chromium: str, learning_lens: LearningLens
) -> None:
    try:
        from playwright import sync_api
    except ImportError:
        _missing("the playwright package is not installed")
    lens = learning_lens
    assert lens.world is not None
    fields = {
        "scope": SCOPE_TEXT,
        "record_id": lens.world.lesson.id,
        "section": "heuristic",
        "approver": "nobody",
        "reason": "injected",
    }
    inputs = "".join(
        f"<input type=hidden name={json.dumps(k)} value={json.dumps(v)}>" for k, v in fields.items()
    )
    # A plain form post: the browser sends it with the lens's cookie (another port of
    # 127.0.0.1 is the same site), and no preflight is asked.
    attack = f"""<!doctype html><title>other</title>
    <form id=f method=post action={json.dumps(lens.url + "/learning/promote")}>{inputs}</form>
    <script>document.getElementById("f").submit();</script>"""
    with _other_local_site(attack) as other_url, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=CHROMIUM_ARGS, timeout=60_000
        )
        try:
            context = browser.new_context()
            context.set_default_timeout(WAIT_MS)
            page = context.new_page()
            page.goto(f"{lens.url}/?token={lens.token}")
            sync_api.expect(page).to_have_url(f"{lens.url}/")
            page.goto(other_url)
            sync_api.expect(page).to_have_url(f"{lens.url}/learning/promote")
            sync_api.expect(page.locator("body")).to_contain_text(
                "requests from another origin may not change memory"
            )
            page.goto(f"{lens.url}/learning?scope={quote(SCOPE_TEXT)}")
            sync_api.expect(page.locator("#promoted-empty")).to_be_visible()
            sync_api.expect(page.locator("#ledger-empty")).to_be_visible()
        finally:
            browser.close()
    assert [a for a in lens.answers if a[:2] == ("POST", "/learning/promote")] == [
        ("POST", "/learning/promote", 403)
    ]
