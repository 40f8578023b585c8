"""The lens beside an agent in another process, over the store's event journal.

An agent process (``examples/agent_beside_the_lens.py``, writing through
``MemoryCapability``) and ``recallstore serve`` run as two real processes on one
SQLite file. Chromium (Debian's, through Playwright) shows the agent's write in the
live feed by itself. Then the server is killed, the agent writes on, the
server restarts: a client that reconnects with its ``Last-Event-ID`` gets exactly
the events it missed, in order, once each, and the page's own EventSource catches up
by itself.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.dashboard.conftest import CHROMIUM_ARGS, WAIT_MS, _missing

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "examples" / "agent_beside_the_lens.py"
TOKEN = "lens-beside-an-agent"
SERVE = (sys.executable, "-m", "recallstore", "serve")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


class Agent:
    """The example agent, driven line by line through its stdin."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(AGENT), str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        assert self._answer() == {"ready": True}

    def _answer(self) -> dict[str, object]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the agent exited"
        answer: dict[str, object] = json.loads(line)
        return answer

    def save(self, text: str) -> str:
        """Save ``text`` as a memory; the record id once the write has committed."""
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()
        return str(self._answer()["saved"])

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def start_server(db: Path, port: int = 0) -> tuple[subprocess.Popen[str], int]:
    """``recallstore serve`` on ``port`` (0: any); the process and its port."""
    server = subprocess.Popen(
        [*SERVE, "--db", str(db), "--port", str(port), "--token", TOKEN],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    assert found, f"serve printed {line!r}"
    return server, int(found.group(1))


def write_event_id(db: Path, record_id: str) -> int:
    """The journal id of the write event that created ``record_id``."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT seq FROM memory_journal WHERE type = 'agent.memory.write' AND envelope LIKE ?",
            (f'%"{record_id}"%',),
        ).fetchall()
    conn.close()
    assert len(rows) == 1
    return int(rows[0][0])


def journal_ids(db: Path, after: int, until: int) -> list[int]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT seq FROM memory_journal WHERE seq > ? AND seq <= ? ORDER BY seq",
            (after, until),
        ).fetchall()
    conn.close()
    return [int(row[0]) for row in rows]


def stream_ids(url: str, last_event_id: int, until: int) -> Iterator[tuple[str, int]]:
    """``(event type, id)`` of each SSE message after ``last_event_id``, up to ``until``."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Last-Event-ID": str(last_event_id)}
    with httpx.stream("GET", f"{url}/events/", headers=headers, timeout=15) as response:
        assert response.status_code == 200
        kind, ident = None, None
        for line in response.iter_lines():
            if line.startswith("event:"):
                kind = line.removeprefix("event:").strip()
            elif line.startswith("id:"):
                ident = int(line.removeprefix("id:").strip())
            elif line == "" and kind is not None:
                assert ident is not None, f"a {kind} message without an id"
                yield kind, ident
                if ident >= until:
                    return
                kind, ident = None, None


@pytest.mark.slow
def test_the_lens_follows_an_agent_in_another_process_across_a_restart(
    chromium: str, tmp_path: Path
) -> None:
    try:
        from playwright import sync_api
    except ImportError:
        _missing("the playwright package is not installed")
    expect = sync_api.expect
    db = tmp_path / "memory.db"
    agent = Agent(db)
    server, port = start_server(db)
    url = f"http://127.0.0.1:{port}"
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, args=CHROMIUM_ARGS, timeout=60_000
            )
            try:
                page = browser.new_page()
                page.set_default_timeout(WAIT_MS)
                page.goto(f"{url}/?token={TOKEN}")
                status = page.locator("#feed-status")
                expect(status).to_have_attribute("data-state", "connected", timeout=WAIT_MS)

                def row(record_id: str) -> sync_api.Locator:
                    link = page.locator(f'a[href="/records/{record_id}"]')
                    return page.locator('#feed .event[data-type="agent.memory.write"]').filter(
                        has=link
                    )

                # The agent's write, committed in its own process, comes on screen by itself
                # (no reload); a second in an idle machine, so WAIT_MS bounds it on a busy one.
                paris = agent.save("Lives in Paris")
                expect(row(paris)).to_have_count(1, timeout=WAIT_MS)
                seen = write_event_id(db, paris)

                # The server dies; the agent writes on.
                server.send_signal(signal.SIGKILL)
                server.wait(timeout=30)
                expect(status).not_to_have_attribute("data-state", "connected")
                missed = [agent.save(text) for text in ("Likes green tea", "Works at Acme")]
                last_write = write_event_id(db, missed[-1])

                server, _ = start_server(db, port)
                # A client resuming from its Last-Event-ID gets exactly what it missed.
                received = list(stream_ids(url, seen, last_write))
                ids = [ident for _, ident in received]
                assert ids == journal_ids(db, seen, last_write)
                assert len(ids) == len(set(ids))
                writes = [ident for kind, ident in received if kind == "agent.memory.write"]
                assert writes == [write_event_id(db, record_id) for record_id in missed]

                # The page's own EventSource reconnects and shows each write exactly once.
                expect(status).to_have_attribute("data-state", "connected", timeout=WAIT_MS)
                for record_id in (paris, *missed):
                    expect(row(record_id)).to_have_count(1)
                page.screenshot(path=str(tmp_path / "lens-beside-an-agent.png"))
            finally:
                browser.close()
    finally:
        server.kill()
        server.wait(timeout=30)
        agent.stop()
