"""The JSON API's answers to bodies that cannot be read: 400 invalid_json, never 500."""

from __future__ import annotations

import httpx
import pytest

from recallstore.events import ObservedMemoryStore
from recallstore.records import MemorySearchQuery

HUGE_INTEGER = "9" * 4301

UNREADABLE_BODIES = [
    pytest.param(
        '{"scope": {"u": "1"}, "content": "x", "payload": ' + HUGE_INTEGER + "}",
        "a number has 4301 digits",
        id="huge-integer",
    ),
    pytest.param("[" * 100_000 + "]" * 100_000, "deeper than 256 levels", id="200kB-of-arrays"),
    pytest.param(
        '{"scope": {"u": "1"}, "content": "x", "payload": ' + "[" * 300 + "]" * 300 + "}",
        "deeper than 256 levels",
        id="depth-300",
    ),
    pytest.param(
        '{"scope": {"u": "1"}, "content": "x", "payload": Infinity}',
        "Infinity is not a JSON value",
        id="infinity",
    ),
    pytest.param(b'{"scope": {"u": "1"}, "content": "\xff"}', "not UTF-8", id="not-utf8"),
]


@pytest.mark.parametrize(("body", "problem"), UNREADABLE_BODIES)
async def test_an_unreadable_body_is_400_invalid_json_and_writes_nothing(
    client: httpx.AsyncClient, store: ObservedMemoryStore, body: str | bytes, problem: str
) -> None:
    content = body.encode() if isinstance(body, str) else body
    headers = {"content-type": "application/json"}
    for path in ("/api/records", "/api/records/someid/invalidate"):
        response = await client.post(path, content=content, headers=headers)
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "invalid_json"
        assert problem in response.json()["message"]
    assert await store.inner.search(MemorySearchQuery(include_invalidated=True)) == []
