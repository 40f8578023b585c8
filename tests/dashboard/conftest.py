"""Fixtures for the memory lens: a real SQLite store, an event bus, the app, a client.

Also prints the browser test's screenshot paths in the terminal summary, so they show
in CI output even when the test passes.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.dashboard import create_dashboard_app
from recallstore.events import EventBus, ObservedMemoryStore

SCREENSHOTS_KEY = pytest.StashKey[list[str]]()

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 10_000
"""Longest wait for anything to appear in the page."""


def _missing(reason: str) -> None:
    if os.environ.get("RECALLSTORE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}, and RECALLSTORE_REQUIRE_BROWSER=1 requires the browser test")
    pytest.skip(reason)


@pytest.fixture
def chromium() -> str:
    """The system Chromium's path (RECALLSTORE_CHROMIUM overrides the search)."""
    override = os.environ.get("RECALLSTORE_CHROMIUM")
    candidates = (
        [override]
        if override
        else ["/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")]
    )
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    _missing(f"no Chromium found (looked for {', '.join(c for c in candidates if c)})")
    raise AssertionError("unreachable")


@pytest.fixture
def token() -> str:
    return "lens-" + secrets.token_urlsafe(16)


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


@pytest.fixture
async def store(tmp_path: Path, bus: EventBus) -> AsyncIterator[ObservedMemoryStore]:
    async with SqliteMemoryStore(tmp_path / "memory.db") as raw:
        yield ObservedMemoryStore(raw, bus)


@pytest.fixture
def app(store: ObservedMemoryStore, bus: EventBus, token: str) -> Starlette:
    return create_dashboard_app(store, bus, token=token)


@pytest.fixture
async def anonymous(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """A client without the token."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
async def client(app: Starlette, token: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client that opened the lens with its token (so it holds the cookie)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.get("/", params={"token": token})
        assert response.status_code == 303
        assert client.cookies.get("recallstore_token") == token
        yield client


@pytest.fixture
def report_screenshot(request: pytest.FixtureRequest) -> Callable[[Path], None]:
    """Records a screenshot path for the terminal summary ("screenshot: <path>")."""

    def report(path: Path) -> None:
        request.config.stash.setdefault(SCREENSHOTS_KEY, []).append(str(path))

    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    paths = terminalreporter.config.stash.get(SCREENSHOTS_KEY, [])
    if paths:
        terminalreporter.section("memory lens screenshots")
        for path in paths:
            terminalreporter.write_line(f"screenshot: {path}")
