"""The feed shows events in the order they happened, across processes.

Two real processes write and search one SQLite file, taking turns, while
``recallstore serve`` follows its journal and Chromium shows the live feed. Each
process journals its searches in batches a quarter of a second after its writes, so
the journal's order is not the order things happened; the lens's API and its page
must show the order they happened in anyway (newest on top).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.dashboard.conftest import CHROMIUM_ARGS, WAIT_MS, _missing

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

TOKEN = "lens-feed-order-test"
SCOPE = {"tenant": "t", "user": "u"}

_WORKER = textwrap.dedent(
    """
    import asyncio, json, sys
    from recallstore.backends.sqlite import SqliteMemoryStore
    from recallstore.records import MemorySearchQuery, MemoryWriteInput

    SCOPE = {"tenant": "t", "user": "u"}

    async def main() -> None:
        async with SqliteMemoryStore(sys.argv[1]) as store:
            print(json.dumps({"ready": True}), flush=True)
            loop = asyncio.get_running_loop()
            while line := await loop.run_in_executor(None, sys.stdin.readline):
                verb, number = line.split()
                if verb == "write":
                    content = f"Note number {number}"
                    (record,) = await store.write([MemoryWriteInput(scope=SCOPE, content=content)])
                    print(json.dumps({"id": record.id}), flush=True)
                else:  # a search, told apart in its event by its limit
                    query = MemorySearchQuery(query="note", scope=SCOPE, limit=int(number))
                    await store.search(query)
                    print(json.dumps({"searched": int(number)}), flush=True)

    asyncio.run(main())
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


class Worker:
    """A process with its own store on the file, doing what its stdin says."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        assert self.answer() == {"ready": True}

    def answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the worker exited"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def do(self, verb: str, number: int) -> dict[str, Any]:
        """Run one operation; returns once it has finished."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{verb} {number}\n")
        self.process.stdin.flush()
        return self.answer()

    def stop(self) -> None:
        """Close the store (which journals the searches still buffered) and exit."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        assert self.process.wait(timeout=30) == 0


def start_serve(db: Path) -> tuple[subprocess.Popen[str], str]:
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


def _label(event: dict[str, Any]) -> str:
    """An event, named as the test's operations are: ``write <record id>`` or
    ``search <limit>``."""
    data = event["data"]
    if event["type"] == "agent.memory.write":
        return f"write {data['record_ids'][0]}"
    return f"search {data['limit']}"


@pytest.mark.slow
def test_two_processes_interleaving_show_in_the_order_they_happened(
    chromium: str, tmp_path: Path
) -> None:
    try:
        from playwright import sync_api
    except ImportError:
        _missing("the playwright package is not installed")
    expect = sync_api.expect
    db = tmp_path / "memory.db"
    first, second = Worker(db), Worker(db)
    server, url = start_serve(db)
    happened: list[str] = []
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, args=CHROMIUM_ARGS, timeout=60_000
            )
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.set_default_timeout(WAIT_MS)
                page.goto(f"{url}/?token={TOKEN}")
                expect(page.locator("#feed-status")).to_have_attribute("data-state", "connected")

                # Taking turns, each operation finished before the next one starts.
                for number in range(1, 17):
                    worker = first if number % 2 else second
                    verb = "write" if number % 4 in (1, 0) else "search"
                    answer = worker.do(verb, number)
                    happened.append(
                        f"write {answer['id']}" if verb == "write" else f"search {number}"
                    )
                first.stop()
                second.stop()

                # The journal holds them in another order: searches land in batches.
                with sqlite3.connect(db) as conn:
                    rows = conn.execute("SELECT envelope FROM memory_journal ORDER BY seq")
                    journal = [_label(json.loads(envelope)) for (envelope,) in rows]
                conn.close()
                assert sorted(journal) == sorted(happened)
                assert journal != happened

                # The API: newest first, in the order they happened.
                listed = httpx.get(
                    f"{url}/api/events",
                    headers={"Authorization": f"Bearer {TOKEN}"},
                    timeout=10,
                )
                assert listed.status_code == 200
                events = listed.json()["events"]
                assert [_label(event) for event in reversed(events)] == happened

                # The page, live: each late batch placed where it belongs, not on top.
                rows_on_page = page.locator("#feed .event")
                expect(rows_on_page).to_have_count(len(happened))
                on_page = rows_on_page.evaluate_all("rows => rows.map(r => r.dataset.eventId)")
                assert on_page == [str(event["id"]) for event in events]
                assert page.evaluate("document.documentElement.scrollWidth") <= 1280
                shot = tmp_path / "feed-two-processes.png"
                page.screenshot(path=str(shot), full_page=True, animations="disabled")
            finally:
                browser.close()
    finally:
        server.kill()
        server.wait(timeout=30)
        for worker in (first, second):
            if worker.process.poll() is None:
                worker.process.kill()
