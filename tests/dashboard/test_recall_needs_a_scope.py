"""The recall preview refuses an empty scope, as assemble_recall does, instead of showing
every user's memories in one block."""

from __future__ import annotations

import httpx

from recallstore.events import ObservedMemoryStore
from recallstore.records import MemoryWriteInput


async def test_the_recall_preview_without_a_scope_is_an_error_naming_the_scope(
    client: httpx.AsyncClient, store: ObservedMemoryStore
) -> None:
    await store.inner.write(
        [MemoryWriteInput(scope={"user": "bob"}, content="Bob's locker code is 4417")]
    )
    for params in ({"text": "locker code"}, {"scope": " ", "text": "locker code"}):
        response = await client.get("/recall", params=params)
        assert response.status_code == 422
        assert "4417" not in response.text
        assert "give the scope the agent would recall for" in response.text
    scoped = await client.get("/recall", params={"scope": "user=bob", "text": "locker code"})
    assert scoped.status_code == 200
    assert "4417" in scoped.text
