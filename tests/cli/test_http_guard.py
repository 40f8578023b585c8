"""The checks in front of ``serve`` and ``mcp --http`` (issue 31, "also seen"): an exact
Host (the dashboard reflected any Host in its ``/events`` redirect; the MCP SDK matched
``localhost:evil.example`` by prefix), an exact Origin, one Authorization header, and a
``--token`` of at least 16 characters. Real servers, real HTTP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.adapters.test_mcp_http import _HEADERS, PING, start
from tests.cli.test_serve_command import TOKEN, serving

from recallstore._command.http_guard import MIN_TOKEN_CHARS


@pytest.fixture
def lens(seeded: object) -> Iterator[str]:
    with serving(seeded.path, "--token", TOKEN) as (address, _):  # type: ignore[attr-defined]
        yield address.split("/?")[0]


@pytest.fixture
def mcp_endpoint(tmp_path: Path) -> Iterator[str]:
    process, endpoint, _ = start(tmp_path, "--token", TOKEN)
    try:
        yield endpoint
    finally:
        process.kill()
        process.wait(timeout=30)


FOREIGN_HOSTS = ["evil.example", "localhost:evil.example", "127.0.0.1:1.evil.example", ""]


@pytest.mark.slow
@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_the_lens_refuses_a_foreign_host_and_never_reflects_it(lens: str, host: str) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}", "Host": host}
    for path in ("/events", "/", "/api/records"):
        answer = httpx.get(lens + path, headers=bearer, timeout=10)
        assert answer.status_code == 421, (path, answer.status_code)
        assert host.encode() not in answer.content or not host
        assert "location" not in answer.headers
    assert httpx.get(lens + "/api/records", headers={"Authorization": f"Bearer {TOKEN}"}).is_success


@pytest.mark.slow
@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_mcp_refuses_a_host_the_sdk_matched_by_prefix(mcp_endpoint: str, host: str) -> None:
    headers = _HEADERS | {"Authorization": f"Bearer {TOKEN}", "Host": host}
    assert httpx.post(mcp_endpoint, json=PING, headers=headers, timeout=10).status_code == 421


@pytest.mark.slow
@pytest.mark.parametrize("origin", ["http://localhost:evil.example", "http://evil.example", "null"])
def test_both_servers_refuse_a_foreign_origin(lens: str, mcp_endpoint: str, origin: str) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}", "Origin": origin}
    assert httpx.get(lens + "/api/records", headers=bearer, timeout=10).status_code == 403
    answer = httpx.post(mcp_endpoint, json=PING, headers=_HEADERS | bearer, timeout=10)
    assert answer.status_code == 403


@pytest.mark.slow
def test_two_authorization_headers_are_refused_whichever_comes_last(
    lens: str, mcp_endpoint: str
) -> None:
    for pair in (["Bearer wrong", f"Bearer {TOKEN}"], [f"Bearer {TOKEN}", "Bearer wrong"]):
        headers = [("Authorization", value) for value in pair]
        assert httpx.get(lens + "/api/records", headers=headers, timeout=10).status_code == 400
        answer = httpx.post(
            mcp_endpoint, json=PING, headers=[*_HEADERS.items(), *headers], timeout=10
        )
        assert answer.status_code == 400


@pytest.mark.slow
@pytest.mark.parametrize("command", [["serve"], ["mcp", "--scope", "user=u1", "--http"]])
def test_a_short_token_is_a_usage_error(tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "memory.db"
    db.touch()
    short = "x" * (MIN_TOKEN_CHARS - 1)
    finished = subprocess.run(
        [sys.executable, "-m", "recallstore", *command, "--db", str(db), "--token", short],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 2, finished.stderr
    assert f"at least {MIN_TOKEN_CHARS} characters" in finished.stderr
