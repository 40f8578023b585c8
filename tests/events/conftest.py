"""Fixtures for the events tests: a real SQLite store, a real uvicorn server on loopback,
and a small SSE reader that parses the raw stream lines itself."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from sse_starlette.sse import AppStatus

from recallstore.backends.sqlite import SqliteMemoryStore

READ_TIMEOUT = 10.0


@pytest.fixture(autouse=True)
def _reset_sse_shutdown_flag() -> Iterator[None]:
    # sse-starlette keeps a process-wide "server is exiting" flag; a stale True would
    # end every later stream at once.
    AppStatus.should_exit = False
    yield
    AppStatus.should_exit = False


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteMemoryStore]:
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        yield store


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run ``app`` with uvicorn on 127.0.0.1 (ephemeral port) in a thread; yield its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2, loop="asyncio"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    # Up to 60 s: a busy machine may take seconds to import and start uvicorn.
    deadline = time.monotonic() + 60
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        threading.Event().wait(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not stop"


@dataclass
class SseMessage:
    event: str | None = None
    id: str | None = None
    data: str = ""
    comments: list[str] = field(default_factory=list)
    retry: int | None = None


class SseReader:
    """Parses ``text/event-stream`` lines from an httpx streaming response."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()

    async def _line(self) -> str:
        return await asyncio.wait_for(anext(self._lines), READ_TIMEOUT)

    async def next(self, *, skip_comments: bool = True) -> SseMessage:
        """The next message; comment-only messages (pings) are skipped unless asked."""
        while True:
            message = SseMessage()
            data_lines: list[str] = []
            seen = False
            while True:
                line = await self._line()
                if line == "":
                    if seen:
                        break
                    continue
                seen = True
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "":
                    message.comments.append(value)
                elif name == "event":
                    message.event = value
                elif name == "id":
                    message.id = value
                elif name == "data":
                    data_lines.append(value)
                elif name == "retry":
                    message.retry = int(value)
            message.data = "\n".join(data_lines)
            if skip_comments and message.event is None and not data_lines:
                continue
            return message

    async def until(self, predicate: Any, *, limit: int = 5000) -> list[SseMessage]:
        """Messages up to and including the first that satisfies ``predicate``."""
        seen = []
        for _ in range(limit):
            message = await self.next()
            seen.append(message)
            if predicate(message):
                return seen
        raise AssertionError(f"no matching message within {limit} messages")


@contextmanager
def raw_http_request(url: str, path: str, headers: dict[str, str]) -> Iterator[socket.socket]:
    """Open a socket, send one GET and never read: a stalled client."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.settimeout(READ_TIMEOUT)
    sock.connect((host, int(port)))
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    try:
        yield sock
    finally:
        sock.close()
