"""RecallstoreStorage under CrewAI's own unified Memory (and a Crew using it), offline.

CrewAI's Memory asks its LLM to infer a memory's scope, categories and importance unless
they are given, and to plan deep recalls: these tests give them, and recall shallow, as
CrewAI documents for running without an LLM; the Crew run uses the scripted LLM.
"""

from __future__ import annotations

import pytest
from crewai import Agent, Crew, Task
from crewai.memory.unified_memory import Memory
from tests.adapters.crewai._model import ScriptedLLM, answer

from recallstore.adapters.crewai import RecallstoreStorage
from recallstore.errors import ConfigurationError
from recallstore.records import MemorySearchQuery
from recallstore.sync import SyncMemoryStore

U1 = {"tenant": "acme", "user": "u1"}
U2 = {"tenant": "acme", "user": "u2"}


def memory_of(
    store: SyncMemoryStore, scope: dict[str, str], llm: ScriptedLLM | None = None
) -> tuple[Memory, RecallstoreStorage]:
    """CrewAI's Memory on the storage; its LLM (for CrewAI's own analysis) is scripted."""
    storage = RecallstoreStorage(store, scope)
    analysis = llm or ScriptedLLM([])
    return Memory(storage=storage, embedder=storage.embedder, llm=analysis), storage


def remember(memory: Memory, content: str, scope: str = "/user") -> str:
    record = memory.remember(content, scope=scope, categories=["profile"], importance=0.9)
    assert record is not None
    return str(record.id)


def test_remember_recall_and_the_host_scope(sync_store) -> None:
    memory, _ = memory_of(sync_store, U1)
    remember(memory, "Lives in Lisbon.")
    other, _ = memory_of(sync_store, U2)
    remember(other, "U2 lives in Oslo.")
    found = memory.recall("Lisbon", depth="shallow")
    assert [match.record.content for match in found] == ["Lives in Lisbon."]
    assert other.recall("Lisbon", depth="shallow") == []  # another user sees nothing
    [record] = [h.record for h in sync_store.search(MemorySearchQuery(scope=U1))]
    assert record.scope == U1
    assert record.payload["crewai"]["scope"] == "/user"
    assert record.tags == ("profile",)


def test_update_supersedes_and_forget_invalidates(sync_store) -> None:
    memory, storage = memory_of(sync_store, U1)
    crew_id = remember(memory, "Lives in Porto.")
    memory.update(crew_id, content="Lives in Lisbon.")
    assert [m.record.content for m in memory.recall("Lives", depth="shallow")] == [
        "Lives in Lisbon."
    ]
    hits = sync_store.search(MemorySearchQuery(scope=U1, include_invalidated=True))
    old = next(h.record for h in hits if h.record.content == "Lives in Porto.")
    new = next(h.record for h in hits if h.record.content == "Lives in Lisbon.")
    assert old.superseded_by == new.id  # the old text stays, in the audit trail

    assert memory.forget(record_ids=[crew_id]) == 1
    assert memory.recall("Lives", depth="shallow") == []
    assert storage.get_record(crew_id) is None
    assert len(sync_store.search(MemorySearchQuery(scope=U1, include_invalidated=True))) == 2


def test_listing_scopes_and_categories(sync_store) -> None:
    memory, storage = memory_of(sync_store, U1)
    remember(memory, "First.", "/user/home")
    remember(memory, "Second.", "/user/work")
    assert [r.content for r in memory.list_records()] == ["Second.", "First."]  # newest first
    assert storage.list_scopes("/user") == ["/user/home", "/user/work"]
    assert storage.list_categories() == {"profile": 2}
    info = storage.get_scope_info("/user")
    assert (info.record_count, info.child_scopes) == (2, ["/user/home", "/user/work"])
    memory.reset("/user/home")
    assert [r.content for r in memory.list_records()] == ["Second."]
    assert storage.count() == 1


def test_a_search_by_another_embedder_is_refused(sync_store) -> None:
    storage = RecallstoreStorage(sync_store, U1)
    with pytest.raises(ConfigurationError, match=r"embedder=storage\.embedder"):
        storage.search([0.1, 0.2, 0.3])
    with pytest.raises(ConfigurationError, match="scope"):
        RecallstoreStorage(sync_store, {})


def test_a_crew_recalls_from_it_into_the_task(sync_store) -> None:
    # CrewAI's extraction of what to remember from the run: nothing.
    analysis = ScriptedLLM(['{"memories": []}'])
    memory, _ = memory_of(sync_store, U1, analysis)
    remember(memory, "Lives in Lisbon.")
    llm = ScriptedLLM([answer("Lisbon.")])
    agent = Agent(role="Planner", goal="Plan trips", backstory="You plan trips.", llm=llm)
    task = Task(description="Where do I live? Lisbon", expected_output="A city", agent=agent)
    Crew(agents=[agent], tasks=[task], memory=memory).kickoff()
    memory.drain_writes()
    shown = "\n".join(str(m["content"]) for m in llm.calls[0])
    assert "Lives in Lisbon." in shown  # CrewAI's recall, in the task's prompt
    assert len(analysis.calls) == 1  # CrewAI's extraction ran, on the Memory's LLM
    assert len(sync_store.search(MemorySearchQuery(scope=U1))) == 1
