"""After ``recallstore demo``, the lens tells the demo's story, in order and in words.

The demo runs as its own process on a SQLite file, then ``recallstore serve`` opens
the file and Chromium (Debian's, through Playwright) reads the page as a person
would: the feed, oldest at the bottom, goes recall → search → four saves → search →
supersede → the second conversation's recall naming the corrected fact; each row
names what was remembered; the scope's chart renders; nothing scrolls sideways at
1280 px; the recall preview's counter is the length of the block it shows.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.dashboard.conftest import CHROMIUM_ARGS, WAIT_MS, _missing
from tests.dashboard.test_feed_order import _env

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

TOKEN = "lens-demo-story-test"
DEMO_SCOPE = "tenant=demo, user=ana"
SAVED = (
    "The user's name is Ana.",
    "Prefers short, direct answers.",
    "Ana is vegetarian.",
    "Ana's home city is Berlin.",
)
CORRECTED = "Ana's home city is Lisbon; she moved there from Berlin."


def _run_demo(db: Path) -> list[str]:
    """Run the demo on ``db``; the options its closing line gives ``serve``."""
    done = subprocess.run(
        [sys.executable, "-m", "recallstore", "demo", "--db", str(db)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=180,
        check=True,
    )
    found = re.search(r"--embedder (\S+)", done.stdout)
    return ["--embedder", found.group(1)] if found else []


def _serve(db: Path, options: list[str]) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "recallstore",
            "serve",
            "--db",
            str(db),
            "--port",
            "0",
            "--token",
            TOKEN,
            *options,
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    assert found, f"serve printed {line!r}"
    return server, f"http://127.0.0.1:{found.group(1)}"


def _story_beats(rows: list[dict[str, str]]) -> list[str]:
    """The demo's beats, in the order the feed shows them (oldest first)."""
    beats = []
    for row in rows:
        text, kind, conversation = row["text"], row["type"], row["conversation"]
        if kind == "recall" and conversation:
            beats.append(f"recall {conversation}")
        elif kind == "write" and "supersede" in row["summary"]:
            beats.append("supersede " + ("Lisbon" if CORRECTED in text else "?"))
        elif kind == "write":
            beats.append("save " + next((s for s in SAVED if s in text), "?"))
        elif kind == "search" and conversation == "demo-conversation-1":
            beats.append("check" if "duplicate check" in row["summary"] else "search")
    return beats


@pytest.mark.slow
def test_the_feed_after_the_demo_reads_as_its_story(
    chromium: str, tmp_path: Path, report_screenshot: Callable[[Path], None]
) -> None:
    try:
        from playwright import sync_api
    except ImportError:
        _missing("the playwright package is not installed")
    expect = sync_api.expect
    db = tmp_path / "demo.db"
    server, url = _serve(db, _run_demo(db))
    shots = []
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
                page.goto(f"{url}/?token={TOKEN}")
                expect(page.locator("#feed-status")).to_have_attribute("data-state", "connected")
                # Rows name their records once the page has read them from the store.
                writes = page.locator('#feed .event[data-type="agent.memory.write"]')
                expect(writes).to_have_count(5)
                for content in (*SAVED, CORRECTED):
                    expect(writes.filter(has_text=content).first).to_be_visible()
                expect(page.locator("#feed a.record-id .ref-kind").first).to_be_visible()
                expect(page.locator('#feed a.record-id[data-status="gone"]')).to_have_count(0)
                # The story ends with the second conversation's recall: read the rows once
                # it is in (under load the feed may still be receiving the last events).
                second_recall = page.locator('#feed .event[data-type="agent.memory.recall"]')
                expect(
                    second_recall.filter(has_text="demo-conversation-2").filter(has_text=CORRECTED)
                ).to_have_count(1)

                rows = page.locator("#feed .event").evaluate_all(
                    """rows => rows.map(row => ({
                        type: row.dataset.kind,
                        timestamp: row.dataset.timestamp,
                        summary: row.querySelector(".summary").textContent,
                        conversation: (Array.from(row.querySelectorAll(".kv")).find(
                            kv => kv.querySelector(".k").textContent === "conversation"
                        ) || {querySelector: () => ({textContent: ""})})
                            .querySelector(".v").textContent,
                        text: row.textContent}))"""
                )
                rows.reverse()  # oldest first, as a story is read
                stamps = [row["timestamp"] for row in rows]
                assert stamps == sorted(stamps)
                # A recall's own searches (profile, then the first message) come first.
                assert _story_beats(rows) == [
                    "search",
                    "search",
                    "recall demo-conversation-1",
                    "search",
                    # Each save first looks for an equal valid record (the write-time
                    # duplicate check), a search the feed names as such.
                    *(beat for content in SAVED for beat in ("check", f"save {content}")),
                    "search",
                    "supersede Lisbon",
                    "recall demo-conversation-2",
                ]
                assert page.evaluate("document.documentElement.scrollWidth") <= 1280
                shots.append(tmp_path / "demo-story-feed.png")
                page.screenshot(path=str(shots[-1]), full_page=True, animations="disabled")

                # The scope's charts: records by kind, recall blocks against the budget.
                page.goto(f"{url}/records?scope={DEMO_SCOPE}&invalidated=1")
                kinds = page.locator("#chart-kinds svg")
                expect(kinds).to_be_visible()
                # Bars per kind and per second said: a slow run spreads the demo's saves
                # over more seconds, hence more bars, but never over other kinds.
                expect(kinds.locator("rect").first).to_be_visible()
                drawn = kinds.locator("rect").evaluate_all("bars => bars.map(b => b.classList[0])")
                assert set(drawn) == {"kind-fact", "kind-preference", "kind-profile"}, drawn
                box = kinds.bounding_box()
                assert box is not None
                assert box["width"] > 300
                assert box["height"] > 90
                expect(page.locator("#chart-kinds")).to_contain_text("3 fact")
                expect(page.locator("#chart-recall svg rect").first).to_be_visible()
                assert page.evaluate("document.documentElement.scrollWidth") <= 1280
                shots.append(tmp_path / "demo-story-charts.png")
                page.screenshot(path=str(shots[-1]), full_page=True, animations="disabled")

                # The recall preview's counter is the length of the block it shows.
                page.goto(f"{url}/recall?scope={DEMO_SCOPE}&text=where+does+she+live")
                block = page.locator("#recall-block").text_content()
                assert block is not None
                expect(page.locator("#recall-size")).to_have_text(
                    f"block {len(block)} / 4000 chars"
                )
                assert page.evaluate("document.documentElement.scrollWidth") <= 1280
                shots.append(tmp_path / "demo-story-recall.png")
                page.screenshot(path=str(shots[-1]), full_page=True, animations="disabled")

                favicon = page.request.get(f"{url}/favicon.ico")
                assert favicon.status == 200
                assert favicon.headers["content-type"].startswith("image/svg+xml")
            finally:
                browser.close()
    finally:
        server.kill()
        server.wait(timeout=30)
    for shot in shots:
        assert shot.stat().st_size > 10_000, f"{shot} looks empty"
        report_screenshot(shot)
