"""``serve --token`` / ``mcp --http --token``: a token that could never log in is refused at
startup, and the ``?token=`` login answers 401, never 500, whatever it is sent."""

from __future__ import annotations

import socket

import pytest
from tests.cli.conftest import Seeded, run_process
from tests.cli.test_serve_command import TOKEN, serving

from recallstore.dashboard import create_dashboard_app
from recallstore.errors import ConfigurationError
from recallstore.events import EventBus
from recallstore.tokens import TOKEN_RULE

UNUSABLE = [
    ("a-long-enough-token ", "' ' at position 19"),
    ("a-long-enough-token\n", "'\\n' at position 19"),
    (" a-long-enough-token", "' ' at position 0"),
    ("a-long-enough-tok€n", "'€' at position 17"),
    ("a-long-enough-tokén", "'é' at position 17"),
    ("a-long+enough+token", "'+' at position 6"),
    ("a-long-enough;token", "';' at position 13"),
]


@pytest.mark.parametrize(("token", "where"), UNUSABLE)
@pytest.mark.parametrize("command", [["serve"], ["mcp", "--scope", "user=a", "--http"]])
def test_a_token_that_could_never_log_in_is_refused_at_startup(
    seeded: Seeded, command: list[str], token: str, where: str
) -> None:
    result = run_process(*command, "--db", seeded.path, "--port", "0", "--token", token)
    assert result.code == 2
    assert result.out == ""
    [line] = result.err.splitlines()
    assert line.endswith(f"error: --token has {where}; a token holds {TOKEN_RULE}")


@pytest.mark.parametrize(("token", "where"), UNUSABLE)
def test_the_dashboard_refuses_such_a_token_too(token: str, where: str) -> None:
    from recallstore.backends.memory import InMemoryMemoryStore

    with pytest.raises(ConfigurationError) as refused:
        create_dashboard_app(InMemoryMemoryStore(), EventBus(), token=token)
    assert f"token has {where}; a token holds {TOKEN_RULE}" in str(refused.value)


OFFERED = [
    "%E2%82%AC" * 8,  # non-Latin-1
    "%C3%A9" * 8,  # Latin-1, not ASCII
    TOKEN + "%0A",  # a newline
    TOKEN + "%20",
    "%ED%A0%80" * 4,  # a lone surrogate's bytes: not UTF-8
    "%FF%FE" * 6,  # not UTF-8 at all
    "%00" * 20,
    "x" * 20_000,
]


@pytest.mark.slow
def test_the_token_login_answers_401_never_500(seeded: Seeded) -> None:
    with serving(seeded.path, "--token", TOKEN) as (address, _):
        host, port = address.removeprefix("http://").split("/")[0].split(":")
        for offered in OFFERED:
            status = _raw_get(host, int(port), f"/?token={offered}")
            assert status == 401, (offered[:40], status)
        assert _raw_get(host, int(port), f"/?token={TOKEN}") == 303


def _raw_get(host: str, port: int, target: str) -> int:
    """The status of one GET sent byte for byte as written (no client re-encoding)."""
    with socket.create_connection((host, port), timeout=30) as sock:
        request = f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
        sock.sendall(request.encode("ascii"))
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1])
