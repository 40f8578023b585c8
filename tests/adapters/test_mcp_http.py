"""``recallstore mcp --http``: streamable HTTP on 127.0.0.1, behind the bearer token.

A real server process on a free port; the official ``mcp`` client connects with the
token, plain HTTP requests without it (or with a wrong one, or a foreign Host) are
refused, and Ctrl+C stops it cleanly.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from recallstore.toolset import MEMORY_TOOLS

TOKEN = "test-token-0123456789"
TIMEOUT = 30
# Any JSON-RPC request: the gate answers before the SDK reads it.
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def start(tmp_path: Path, *token_args: str) -> tuple[subprocess.Popen[str], str, str]:
    """``recallstore mcp --http --port 0``; the process, its endpoint and its token."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "recallstore",
            "mcp",
            "--db",
            str(tmp_path / "memory.db"),
            "--scope",
            "user=u1",
            "--http",
            "--port",
            "0",
            *token_args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    endpoint = re.fullmatch(
        r"MCP endpoint: (http://127\.0\.0\.1:\d+/mcp)\n", process.stdout.readline()
    )
    token = re.fullmatch(r"Authorization: Bearer (\S+)\n", process.stdout.readline())
    assert endpoint is not None
    assert token is not None
    return process, endpoint.group(1), token.group(1)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process, endpoint, token = start(tmp_path, "--token", TOKEN)
    assert token == TOKEN
    try:
        yield process, endpoint
    finally:
        process.kill()
        process.wait(timeout=TIMEOUT)


@pytest.mark.slow
async def test_the_official_client_connects_with_the_token(
    served: tuple[subprocess.Popen[str], str],
) -> None:
    _, endpoint = served
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    with anyio.fail_after(TIMEOUT):
        async with http, Client(streamable_http_client(endpoint, http_client=http)) as client:
            tools = (await client.list_tools()).tools
            saved = await client.call_tool("memory_save", {"content": "Likes tea."})
    assert [tool.name for tool in tools] == [spec.name for spec in MEMORY_TOOLS]
    assert saved.is_error is False
    assert isinstance(saved.structured_content, dict)
    assert saved.structured_content["ok"] is True


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Cookie": f"recallstore_token={TOKEN}"},
    ],
)
@pytest.mark.slow
def test_without_the_token_every_request_is_refused(
    served: tuple[subprocess.Popen[str], str], headers: dict[str, str]
) -> None:
    _, endpoint = served
    answer = httpx.post(endpoint, json=PING, headers=_HEADERS | headers, timeout=TIMEOUT)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == 'Bearer realm="recallstore"'
    assert answer.json()["error"] == "unauthorized"
    assert httpx.post(endpoint + f"?token={TOKEN}", json=PING, headers=_HEADERS).status_code == 401


@pytest.mark.slow
def test_a_foreign_host_header_is_refused_even_with_the_token(
    served: tuple[subprocess.Popen[str], str],
) -> None:
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host.
    _, endpoint = served
    headers = _HEADERS | {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}
    answer = httpx.post(endpoint, json=PING, headers=headers, timeout=TIMEOUT)
    assert answer.status_code in (400, 403, 421)


@pytest.mark.slow
def test_a_fresh_token_per_run_and_ctrl_c_stops_cleanly(tmp_path: Path) -> None:
    first, _, first_token = start(tmp_path)
    second, endpoint, second_token = start(tmp_path)
    try:
        assert first_token != second_token
        assert len(first_token) >= 24
        refused = httpx.post(
            endpoint,
            json=PING,
            headers=_HEADERS | {"Authorization": f"Bearer {first_token}"},
            timeout=TIMEOUT,
        )
        assert refused.status_code == 401
    finally:
        for process in (first, second):
            process.send_signal(signal.SIGINT)
    for process in (first, second):
        out, err = process.communicate(timeout=TIMEOUT)
        assert process.returncode == 0, err
        assert out.splitlines()[-1] == "Stopped."
        assert "Traceback" not in err
