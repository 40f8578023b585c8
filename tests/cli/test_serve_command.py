"""`recallstore serve`: a real server on 127.0.0.1, a real HTTP client and event stream."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

TOKEN = "test-token-1234567"


@contextmanager
def serving(db: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start `recallstore serve`, yield its printed base URL, stop it with Ctrl+C."""
    server = subprocess.Popen(
        [sys.executable, "-m", "recallstore", "serve", "--db", str(db), "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    stdout = server.stdout
    assert stdout is not None

    def pump() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        first = lines.get(timeout=30)
        assert first.startswith("Memory lens: http://127.0.0.1:"), first
        yield first.removeprefix("Memory lens: ").strip(), server
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            pytest.fail("serve did not stop on Ctrl+C")


@pytest.mark.slow
def test_serve_prints_the_address_and_guards_it_with_the_token(seeded) -> None:
    with serving(seeded.path, "--token", TOKEN) as (address, server):
        assert address.endswith(f"/?token={TOKEN}")
        base = address.split("/?")[0]
        with httpx.Client(base_url=base, timeout=10, follow_redirects=True) as client:
            assert client.get("/records").status_code == 401
            assert client.get("/events/").status_code == 401
            login = client.get(f"/?token={TOKEN}")  # follows the redirect, keeps the cookie
            assert login.status_code == 200
            assert client.cookies.get("recallstore_token") == TOKEN
            records = client.get("/api/records", params={"scope": "user=alice"})
            assert records.status_code == 200
            assert seeded.purple.id in records.text
    assert server.returncode == 0
    assert "Traceback" not in server.stderr.read()  # type: ignore[union-attr]


@pytest.mark.slow
def test_changes_made_through_serve_stream_as_events(seeded, record_in) -> None:
    with serving(seeded.path, "--token", TOKEN) as (address, _):
        base = address.split("/?")[0]
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with (
            httpx.Client(base_url=base, timeout=10, headers=headers) as client,
            client.stream("GET", "/events/") as stream,
        ):
            assert stream.status_code == 200
            reply = client.post(
                f"/api/records/{seeded.purple.id}/invalidate", json={"reason": "via serve"}
            )
            assert reply.status_code == 200
            event = None
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    event = json.loads(line.removeprefix("data:"))
                    if event["type"] == "agent.memory.write":
                        break
            assert event is not None
            assert event["data"]["operation"] == "invalidate"
            assert event["data"]["record_ids"] == [seeded.purple.id]
            assert "via serve" not in json.dumps(event)  # no content without --include-content
    assert record_in(seeded.path, seeded.purple.id).invalid_reason == "via serve"


@pytest.mark.slow
def test_include_content_shows_content_on_a_journaled_store(seeded) -> None:
    # The seeded SQLite store keeps a journal, so the lens streams it (issue 31, defect 8).
    with serving(seeded.path, "--token", TOKEN, "--include-content") as (address, _):
        base = address.split("/?")[0]
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with (
            httpx.Client(base_url=base, timeout=10, headers=headers) as client,
            client.stream("GET", "/events/") as stream,
        ):
            reply = client.post(
                f"/api/records/{seeded.purple.id}/invalidate", json={"reason": "via serve"}
            )
            assert reply.status_code == 200
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    event = json.loads(line.removeprefix("data:"))
                    if event["type"] == "agent.memory.write":
                        break
            assert event["data"]["operation"] == "invalidate"
            assert event["data"]["reason"] == "via serve"


@pytest.mark.slow
def test_serve_generates_a_token_when_none_is_given(seeded) -> None:
    with serving(seeded.path) as (address, _):
        token = address.split("?token=")[1]
        assert len(token) >= 24
        base = address.split("/?")[0]
        with httpx.Client(base_url=base, timeout=10) as client:
            assert client.get("/").status_code == 401
            authorised = client.get("/records", headers={"Authorization": f"Bearer {token}"})
            assert authorised.status_code == 200


@pytest.mark.slow
def test_serve_refuses_a_missing_database(process, tmp_path) -> None:
    result = process("serve", "--db", tmp_path / "none.db", "--port", "0")
    assert result.code == 1
    assert result.err.strip() == (
        f"recallstore: error: no memory database at '{tmp_path / 'none.db'}' "
        "(check --db or $RECALLSTORE_DB)"
    )


@pytest.mark.slow
def test_serve_reports_a_busy_port(process, seeded) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = process("serve", "--db", seeded.path, "--port", port)
    assert result.code == 1
    [line] = result.err.strip().splitlines()
    assert line.startswith(f"recallstore: error: cannot listen on 127.0.0.1:{port}: ")
