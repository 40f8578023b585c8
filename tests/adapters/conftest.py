"""The story every framework adapter test tells, with the framework's own offline model.

Conversation 1 saves where the user lives, then corrects it with ``supersedes``;
conversation 2 must start with the corrected fact in its instructions and without the
superseded one. ``Story`` holds the facts and the checks; each test file drives its
framework's real package through it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.capability import MemoryCapability
from recallstore.prompt import RECALL_CLOSE, RECALL_OPEN
from recallstore.records import MemorySearchQuery


class Story:
    """Facts and checks of the two-conversation story, for one store."""

    old = "Lives in Porto."
    new = "Lives in Lisbon."

    def __init__(self, store: SqliteMemoryStore) -> None:
        self.store = store
        self.scope = {"tenant": "acme", "user": "u1"}
        self.other = {"tenant": "acme", "user": "u2"}

    def save_old(self) -> dict[str, Any]:
        return {"content": self.old, "kind": "profile"}

    def save_new(self, old_id: str) -> dict[str, Any]:
        return {"content": self.new, "kind": "profile", "supersedes": old_id}

    @staticmethod
    def saved_id(result: Any) -> str:
        """The id of the memory a memory_save result (dict or JSON text) reports."""
        data = json.loads(result) if isinstance(result, str) else result
        assert data["ok"] is True, data
        return str(data["memory"]["id"])

    async def check_saved_and_superseded(self, conversation_id: str) -> None:
        """The store holds the old fact superseded by the new one, both in the user's scope."""
        hits = await self.store.search(
            MemorySearchQuery(scope=self.scope, include_invalidated=True)
        )
        records = {hit.record.content: hit.record for hit in hits}
        assert set(records) == {self.old, self.new}
        assert records[self.old].superseded_by == records[self.new].id
        assert records[self.new].is_invalidated is False
        for record in records.values():
            assert record.scope == self.scope
            assert record.provenance is not None
            assert record.provenance.conversation_id == conversation_id

    def check_recalled(self, instructions: str | None) -> None:
        """The instructions hold the recall block: the new fact, not the superseded one."""
        assert instructions is not None
        assert RECALL_CLOSE in instructions, instructions
        block = instructions.rsplit(RECALL_OPEN, 1)[1].split(RECALL_CLOSE, 1)[0]
        assert self.new in block
        assert self.old not in instructions
        assert "memory_save" in instructions  # the Manual comes first

    told = "I adopted a cat named Miso last week."
    """What conversation 1 says and no model saves: only the end-of-conversation hook keeps it."""
    asked = "What is my cat called?"

    async def check_nothing_saved(self) -> None:
        """The user's scope is empty: the model saved nothing."""
        hits = await self.store.search(
            MemorySearchQuery(scope=self.scope, include_invalidated=True)
        )
        assert hits == []

    async def check_captured(self, conversation_id: str, added: int) -> None:
        """The hook stored the conversation's user and assistant text as episodes."""
        hits = await self.store.search(MemorySearchQuery(scope=self.scope, limit=100))
        records = [hit.record for hit in hits]
        assert len(records) == added >= 2
        assert {record.kind for record in records} == {"episode"}
        assert all(
            r.provenance is not None and r.provenance.conversation_id == conversation_id
            for r in records
        )
        assert any(self.told in record.content for record in records)

    def check_told_recalled(self, instructions: str | None) -> None:
        """Conversation 2's recall block holds what conversation 1 said."""
        assert instructions is not None
        assert RECALL_CLOSE in instructions, instructions
        block = instructions.rsplit(RECALL_OPEN, 1)[1].split(RECALL_CLOSE, 1)[0]
        assert self.told in block, block

    def check_nothing_recalled(self, instructions: str | None) -> None:
        assert instructions is not None
        assert "memory_save" in instructions
        assert RECALL_CLOSE not in instructions  # the Manual names the block, only opening it
        assert self.new not in instructions

    @staticmethod
    def check_refused_scope(result: Any) -> None:
        """A tool result refusing a ``scope`` argument from the model, naming it."""
        data = json.loads(result) if isinstance(result, str) else result
        assert data["ok"] is False, data
        assert data["error"]["code"] == "invalid_arguments"
        assert "scope" in data["error"]["fields"]

    @staticmethod
    def check_empty(result: Any) -> None:
        data = json.loads(result) if isinstance(result, str) else result
        assert data == {"ok": True, "count": 0, "memories": [], "window": None}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteMemoryStore]:
    async with SqliteMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


@pytest.fixture
def capability(store: SqliteMemoryStore) -> MemoryCapability:
    return MemoryCapability(store, scope_fields=("tenant", "user"))


@pytest.fixture
def story(store: SqliteMemoryStore) -> Story:
    return Story(store)
