"""The CrewAI adapter, driven by CrewAI's own Crew/Agent loop and a scripted BaseLLM, offline.

Runs in .venv-crewai (`make test`); see conftest.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from crewai import Agent, Crew, Task
from tests.adapters.conftest import Story
from tests.adapters.crewai._model import ScriptedLLM, act, answer, observations

from recallstore.adapters.crewai import CrewAIMemory, MemorySession
from recallstore.errors import ConfigurationError, StoreUnavailableError
from recallstore.records import MemorySearchQuery
from recallstore.sync import SyncMemoryCapability, SyncMemoryStore


def run(memory: CrewAIMemory, llm: ScriptedLLM, text: str) -> str:
    """One crew run of the conversation: the recall in the agent's backstory."""
    agent = Agent(
        role="Travel agent",
        goal="Plan trips",
        backstory=f"You plan trips.\n\n{memory.instructions(text)}",
        llm=llm,
        tools=memory.tools,
    )
    task = Task(description=text, expected_output="A reply", agent=agent)
    return str(Crew(agents=[agent], tasks=[task]).kickoff())


def story_of(sync_store: SyncMemoryStore) -> Story:
    return Story(sync_store.store)  # type: ignore[arg-type]


def test_two_conversations(sync_store, sync_capability) -> None:
    story = story_of(sync_store)
    memory = CrewAIMemory(sync_capability, MemorySession(story.scope, "conv-1"))
    llm = ScriptedLLM(
        [
            act("memory_save", story.save_old()),
            lambda shown: act("memory_save", story.save_new(saved(shown))),
            answer("Noted."),
        ]
    )
    assert run(memory, llm, "I live in Porto. No, Lisbon!") == "Noted."
    sync_store.loop.run(story.check_saved_and_superseded("conv-1"))

    second = CrewAIMemory(sync_capability, MemorySession(story.scope, "conv-2"))
    llm2 = ScriptedLLM([answer("Lisbon."), answer("Still Lisbon.")])
    run(second, llm2, "Where do I live?")
    story.check_recalled(llm2.system(0))
    assert "You plan trips." in llm2.system(0)

    # Saved mid-conversation: next conversation's recall, not this prompt (prompt cache).
    sync_capability.toolbox(story.scope).call("memory_save", {"content": "Likes tea."})
    run(second, llm2, "Sure?")
    assert llm2.system(1) == llm2.system(0)


def test_another_user_sees_nothing(sync_store, sync_capability) -> None:
    story = story_of(sync_store)
    sync_capability.toolbox(story.scope).call(
        "memory_save", {"content": story.new, "kind": "profile"}
    )
    memory = CrewAIMemory(sync_capability, MemorySession(story.other, "conv-9"))
    llm = ScriptedLLM([act("memory_search", {"query": "Lisbon"}), answer("Nothing.")])
    run(memory, llm, "Lisbon?")
    story.check_nothing_recalled(llm.system(0))
    story.check_empty(observations(llm.calls[-1])[0])


def test_scope_from_the_model_cannot_widen_a_search(sync_store, sync_capability) -> None:
    story = story_of(sync_store)
    sync_capability.toolbox(story.other).call("memory_save", {"content": "U2 secret."})
    memory = CrewAIMemory(sync_capability, MemorySession(story.scope, "conv-1"))
    llm = ScriptedLLM(
        [
            act("memory_search", {"query": "secret", "scope": story.other}),
            act("memory_list", {"scope": story.other}),
            answer("Done."),
        ]
    )
    run(memory, llm, "Hi")
    # CrewAI drops arguments the tool's schema does not list before the tool runs; the
    # search and the listing stay in the session's scope.
    searched, listed = observations(llm.calls[-1])
    assert searched["ok"] is True
    assert searched["memories"] == []
    story.check_empty(listed)
    # Called directly, the tool refuses the argument like every adapter.
    story.check_refused_scope(memory.call("memory_list", {"scope": story.other}))


def test_two_mistakes_in_a_row_do_not_end_the_run(sync_store, sync_capability) -> None:
    story = story_of(sync_store)
    memory = CrewAIMemory(sync_capability, MemorySession(story.scope, "conv-1"))
    llm = ScriptedLLM(
        [
            act("memory_invalidate", {"id": "no-such-id"}),
            act("memory_save", {"content": 42}),
            act("memory_invalidate", {"id": "nor-this-one"}),
            answer("Could not find them."),
        ]
    )
    assert run(memory, llm, "Forget") == "Could not find them."
    codes = [result["error"]["code"] for result in observations(llm.calls[-1])]
    assert codes == ["not_found", "invalid_arguments", "not_found"]


def test_a_conversation_nobody_saved_is_captured_and_recalled(sync_store, sync_capability):
    story = story_of(sync_store)
    memory = CrewAIMemory(sync_capability, MemorySession(story.scope, "conv-1"))
    reply = run(memory, ScriptedLLM([answer("What a lovely name.")]), story.told)
    sync_store.loop.run(story.check_nothing_saved())

    conversation = [("user", story.told), ("assistant", reply)]
    captured = memory.capture(conversation)
    sync_store.loop.run(story.check_captured("conv-1", captured.added))
    assert memory.capture(conversation).added == 0
    longer = [*conversation, ("user", "Is it a nice name?"), ("assistant", "Yes.")]
    assert memory.capture(longer).added == 2

    second = CrewAIMemory(sync_capability, MemorySession(story.scope, "conv-2"))
    llm = ScriptedLLM([answer("Miso.")])
    run(second, llm, story.asked)
    story.check_told_recalled(llm.system(0))


def test_the_tools_show_the_specs_schemas(sync_capability) -> None:
    memory = CrewAIMemory(sync_capability, MemorySession({"tenant": "a", "user": "u"}, "c"))
    specs = sync_capability.capability.specs
    assert [tool.name for tool in memory.tools] == [spec.name for spec in specs]
    for tool, spec in zip(memory.tools, specs, strict=True):
        assert tool.args_schema.model_json_schema() == spec.input_schema()


def test_a_session_missing_a_scope_field_is_refused(sync_capability) -> None:
    with pytest.raises(ConfigurationError, match="user"):
        CrewAIMemory(sync_capability, MemorySession({"tenant": "acme"}, "conv-1"))


def test_a_store_failure_is_unavailable_to_the_model_and_kept_for_the_host(tmp_path) -> None:
    store = SyncMemoryStore(tmp_path / "memory.db")
    capability = SyncMemoryCapability(store, scope_fields=("tenant", "user"))
    memory = CrewAIMemory(capability, MemorySession({"tenant": "a", "user": "u"}, "conv-1"))
    memory.instructions("Hi")  # the recall, computed while the store is open
    store.close()
    llm = ScriptedLLM([act("memory_list", {}), answer("Sorry.")])
    assert run(memory, llm, "Hi") == "Sorry."
    [shown] = observations(llm.calls[-1])
    assert shown["error"]["code"] == "unavailable"
    assert "loop" not in str(llm.calls[-1])  # the cause is the host's, not the model's
    [failure] = memory.failures
    assert isinstance(failure, StoreUnavailableError)


def saved(shown: list[dict[str, Any]]) -> str:
    return Story.saved_id(observations(shown)[-1])


def test_captured_records_are_episodes_in_the_scope(sync_store, sync_capability) -> None:
    story = story_of(sync_store)
    memory = CrewAIMemory(sync_capability, MemorySession(story.scope, "conv-1"))
    memory.capture([("user", "Hello."), ("assistant", "Hi.")])
    hits = sync_store.search(MemorySearchQuery(scope=story.scope))
    assert {hit.record.kind for hit in hits} == {"episode"}


async def test_the_async_kickoff_runs_the_same(sync_store, sync_capability) -> None:
    story = story_of(sync_store)
    memory = CrewAIMemory(sync_capability, MemorySession(story.scope, "conv-1"))
    llm = ScriptedLLM([act("memory_save", story.save_old()), answer("Noted.")])
    agent = Agent(
        role="Planner",
        goal="Plan",
        backstory=memory.instructions("Hi"),
        llm=llm,
        tools=memory.tools,
    )
    task = Task(description="I live in Porto.", expected_output="A reply", agent=agent)
    crew = Crew(agents=[agent], tasks=[task], after_kickoff_callbacks=[memory.after_kickoff])
    assert str(await crew.kickoff_async()) == "Noted."
    kinds = sorted(h.record.kind for h in sync_store.search(MemorySearchQuery(scope=story.scope)))
    assert kinds == ["episode", "episode", "profile"]  # the save, and the captured run
