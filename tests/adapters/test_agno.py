"""The Agno adapter, driven by Agno's own Agent loop, offline.

Agno ships no test model: its Anthropic model class (``agno.models.anthropic.Claude``,
through the ``anthropic`` SDK) talks to the scripted Messages API on 127.0.0.1 of
tests/adapters/_fake_claude_api.py. ``agent.run`` (sync) and ``agent.arun`` both run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.schemas import UserMemory
from agno.models.anthropic import Claude
from tests.adapters._fake_claude_api import (
    FakeClaudeApi,
    fake_claude_api,
    result_text,
    say,
    system_text,
    tool_results,
    use,
)
from tests.adapters.conftest import Story

from recallstore.adapters.agno import AgnoMemory
from recallstore.errors import ConfigurationError, MemoryNotFoundError
from recallstore.records import MemorySearchQuery
from recallstore.sync import SyncMemoryStore

U1, U2 = {"tenant": "acme", "user": "u1"}, {"tenant": "acme", "user": "u2"}


@pytest.fixture
def api() -> Iterator[FakeClaudeApi]:
    with fake_claude_api() as running:
        yield running


@pytest.fixture
def sync_store(tmp_path: Path) -> Iterator[SyncMemoryStore]:
    with SyncMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


@pytest.fixture
def memory(sync_store: SyncMemoryStore) -> AgnoMemory:
    return AgnoMemory(sync_store, scope_fields=("tenant", "user"), scope={"tenant": "acme"})


def agent_for(api: FakeClaudeApi, memory: AgnoMemory) -> Agent:
    model = Claude(id="claude-sonnet-4-5", api_key="sk-test", client_params={"base_url": api.url})
    return Agent(model=model, **memory.agent_options())


def results(api: FakeClaudeApi) -> list[Any]:
    return [json.loads(result_text(b)) for body in api.requests for b in tool_results(body)]


def records(store: SyncMemoryStore, scope: dict[str, str], **query: Any) -> list[Any]:
    hits = store.search(MemorySearchQuery(scope=scope, limit=100, **query))
    return [hit.record for hit in hits]


def test_two_conversations(api, memory, sync_store) -> None:
    story = Story(None)  # type: ignore[arg-type]  # its facts and checks, not its store
    api.play(
        [
            use("memory_save", story.save_old()),
            use("memory_save", lambda result: story.save_new(story.saved_id(result))),
            say("Noted."),
        ]
    )
    agent = agent_for(api, memory)
    out = agent.run("I live in Porto. No, Lisbon!", user_id="u1", session_id="c1")
    assert out.content == "Noted."
    assert len({system_text(body) for body in api.requests}) == 1
    saved = {r.content: r for r in records(sync_store, U1, include_invalidated=True)}
    assert saved[story.old].superseded_by == saved[story.new].id
    assert saved[story.new].provenance.conversation_id == "c1"

    api.play([say("You live in Lisbon.")])
    agent.run("Where do I live?", user_id="u1", session_id="c2")
    story.check_recalled(system_text(api.requests[-1]))


async def test_async_runs_recall_too(api, memory) -> None:
    memory.add_user_memory(UserMemory(memory="Lives in Lisbon."), user_id="u1")
    api.play([say("Lisbon.")])
    out = await agent_for(api, memory).arun("Where do I live?", user_id="u1", session_id="c3")
    assert out.content == "Lisbon."
    assert "Lives in Lisbon." in system_text(api.requests[-1])


def test_other_user_scope_and_mistakes(api, memory, sync_store) -> None:
    story = Story(None)  # type: ignore[arg-type]
    memory.add_user_memory(UserMemory(memory=story.old), user_id="u1")
    api.play(
        [
            use("memory_search", {"query": "Porto", "scope": U1}),
            use("memory_invalidate", {"id": "no-such-id"}),
            use("memory_search", {"query": "Porto"}),
            say("Nothing known."),
        ]
    )
    out = agent_for(api, memory).run("Do I live in Porto?", user_id="u2", session_id="c9")
    assert out.content == "Nothing known."
    story.check_nothing_recalled(system_text(api.requests[0]))
    refused, missing, found = results(api)
    story.check_refused_scope(refused)
    assert missing["error"]["code"] == "not_found"
    story.check_empty(found)
    found_by_u2 = [m.memory for m in memory.search_user_memories("Porto", user_id="u2")]
    assert found_by_u2 == ["user: Do I live in Porto?"]  # u2's own captured run, not u1's
    assert [m.memory for m in memory.search_user_memories("Porto", user_id="u1")] == [story.old]


def test_a_conversation_nothing_saved_is_captured_once_and_recalled(
    api, memory, sync_store
) -> None:
    story = Story(None)  # type: ignore[arg-type]
    api.play([say("What a lovely name.")])
    agent = agent_for(api, memory)
    out = agent.run(story.told, user_id="u1", session_id="c1")
    captured = records(sync_store, U1)
    assert {r.content for r in captured} == {
        f"user: {story.told}",
        "assistant: What a lovely name.",
    }
    assert {r.kind for r in captured} == {"episode"}
    again = memory.capture(out, _ctx(out))  # the post-hook again, for the same run
    assert again.added == 0

    api.play([say("Miso.")])
    agent.run(story.asked, user_id="u1", session_id="c2")
    story.check_told_recalled(system_text(api.requests[-1]))


def _ctx(out: Any) -> Any:
    from agno.run.base import RunContext

    return RunContext(run_id=out.run_id, session_id=out.session_id, user_id=out.user_id)


def test_agnos_user_memory_calls_supersede_and_invalidate(memory, sync_store) -> None:
    old = memory.add_user_memory(UserMemory(memory="Lives in Porto."), user_id="u1")
    assert old is not None
    new = memory.replace_user_memory(old, UserMemory(memory="Lives in Lisbon."), user_id="u1")
    assert [m.memory for m in memory.get_user_memories("u1")] == ["Lives in Lisbon."]
    history = {r.content: r for r in records(sync_store, U1, include_invalidated=True)}
    assert history["Lives in Porto."].superseded_by == new
    with pytest.raises(MemoryNotFoundError):
        memory.delete_user_memory(new or "", user_id="u2")  # another user's id: not found
    assert memory.get_user_memory(new or "", user_id="u2") is None
    memory.delete_user_memory(new or "", user_id="u1")
    assert memory.get_user_memories("u1") == []
    assert len(records(sync_store, U1, include_invalidated=True)) == 2  # nothing deleted
    with pytest.raises(ConfigurationError):
        memory.clear()


def test_a_run_without_a_user_is_refused(memory) -> None:
    with pytest.raises(ConfigurationError, match="user_id"):
        memory.get_user_memories(None)
    with pytest.raises(ConfigurationError, match="SyncMemoryStore"):
        AgnoMemory(object())  # type: ignore[arg-type]


def test_an_invalid_memory_is_refused_naming_it_and_nothing_is_saved(memory, sync_store) -> None:
    from recallstore.errors import MemoryValidationError

    with pytest.raises(MemoryValidationError, match="at most"):
        memory.add_user_memory(UserMemory(memory="x" * 20_000), user_id="u1")
    assert records(sync_store, U1, include_invalidated=True) == []
