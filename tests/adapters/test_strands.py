"""The Strands adapter, driven by Strands' own Agent loop with a scripted model, offline.

Strands ships no test model; ``Scripted`` is a ``strands.models.Model`` (the provider
interface every Strands model implements) that plays tool uses and texts in order,
recording the system prompt and tool results the real agent loop sent it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest
from strands import Agent
from strands.memory import AddMessagesContext
from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

from recallstore.adapters.strands import MemorySession, RecallstoreMemoryStore, StrandsMemory
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.capability import MemoryCapability
from recallstore.errors import ConfigurationError, StoreUnavailableError
from recallstore.records import MemorySearchQuery
from recallstore.sync import SyncMemoryStore

Step = Callable[[Messages], dict[str, Any]]


def use(name: str, arguments: dict[str, Any] | Callable[[Any], dict[str, Any]]) -> Step:
    """A tool use; ``arguments`` may be a function of the last tool result."""

    def step(messages: Messages) -> dict[str, Any]:
        args = arguments(last_result(messages)) if callable(arguments) else arguments
        return {"toolUse": {"name": name, "input": args, "toolUseId": f"t{len(messages)}"}}

    return step


def say(text: str) -> Step:
    return lambda messages: {"text": text}


def last_result(messages: Messages) -> Any:
    [text] = [
        part["text"]
        for block in messages[-1]["content"]
        if "toolResult" in block
        for part in block["toolResult"]["content"]
        if "text" in part
    ]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # Strands' own tools answer an error in plain text


class Scripted(Model):
    """A Strands model provider playing ``steps``; records what the loop sent it."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.system_prompts: list[str | None] = []
        self.results: list[Any] = []
        self.statuses: list[str] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(
        self, messages: Messages, tool_specs: Any = None, system_prompt: str | None = None, **_: Any
    ) -> AsyncIterator[StreamEvent]:
        self.system_prompts.append(system_prompt)
        for sent in messages[-1]["content"]:
            if "toolResult" in sent:
                self.statuses.append(sent["toolResult"]["status"])
                self.results.append(last_result([messages[-1]]))
        block = self.steps.pop(0)(messages)
        yield {"messageStart": {"role": "assistant"}}
        if "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"name": use["name"], "toolUseId": use["toolUseId"]}}
            yield {"contentBlockStart": {"start": start}}  # type: ignore[typeddict-item]
            delta = {"toolUse": {"input": json.dumps(use["input"])}}
            yield {"contentBlockDelta": {"delta": delta}}  # type: ignore[typeddict-item]
        else:
            yield {"contentBlockDelta": {"delta": {"text": block["text"]}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use" if "toolUse" in block else "end_turn"}}


def agent_for(model: Scripted, memory: StrandsMemory, session: MemorySession) -> Agent:
    return Agent(
        model=model,
        system_prompt="You plan trips.",
        memory_manager=memory.manager(session),
        callback_handler=None,
    )


async def run(agent: Agent, text: str) -> str:
    result = await agent.invoke_async(text)
    assert agent.memory_manager is not None
    await agent.memory_manager.flush()
    return str(result).strip()


async def test_two_conversations(capability, story) -> None:
    memory = StrandsMemory(capability)
    first = Scripted(
        [
            use("memory_save", story.save_old()),
            use("memory_save", lambda result: story.save_new(story.saved_id(result))),
            say("Noted."),
        ]
    )
    agent = agent_for(first, memory, MemorySession(story.scope, "conv-1"))
    assert await run(agent, "I live in Porto. No, Lisbon!") == "Noted."
    assert first.statuses == ["success", "success"]
    assert len(set(first.system_prompts)) == 1  # the same prompt on every call
    saved = await story.store.search(
        MemorySearchQuery(scope=story.scope, include_invalidated=True, kinds=("profile",))
    )
    records = {hit.record.content: hit.record for hit in saved}
    assert set(records) == {story.old, story.new}
    assert records[story.old].superseded_by == records[story.new].id
    assert records[story.new].provenance is not None
    assert records[story.new].provenance.conversation_id == "conv-1"

    second = Scripted([say("You live in Lisbon.")])
    agent = agent_for(second, memory, MemorySession(story.scope, "conv-2"))
    assert await run(agent, "Where do I live?") == "You live in Lisbon."
    prompt = second.system_prompts[0]
    assert prompt is not None
    assert prompt.startswith("You plan trips.\n")
    story.check_recalled(prompt)


async def test_another_user_and_a_model_sent_scope_see_nothing(capability, story) -> None:
    memory = StrandsMemory(capability)
    await capability.toolbox(story.scope).call("memory_save", story.save_old())
    script = Scripted(
        [
            use("memory_search", {"query": "Porto", "scope": story.scope}),
            use("memory_search", {"query": "Porto"}),
            say("Nothing."),
        ]
    )
    agent = agent_for(script, memory, MemorySession(story.other, "conv-9"))
    await run(agent, "Do I live in Porto?")
    story.check_nothing_recalled(script.system_prompts[0])
    refused, searched = script.results
    story.check_refused_scope(refused)
    assert script.statuses == ["error", "success"]
    story.check_empty(searched)
    store = agent.memory_manager
    assert store is not None
    # Strands' own search: the session's scope (u2's own captured turn, not u1's fact)
    assert [entry.content for entry in await store.search("Porto")] == ["user: Do I live in Porto?"]


async def test_two_model_mistakes_do_not_end_the_run(capability, story) -> None:
    memory = StrandsMemory(capability)
    script = Scripted(
        [
            use("memory_invalidate", {"id": "no-such-id"}),
            use("memory_save", {"content": story.new, "tags": ["x"] * 20}),
            say("Sorry, I could not."),
        ]
    )
    agent = agent_for(script, memory, MemorySession(story.scope, "conv-1"))
    assert await run(agent, "Forget where I live.") == "Sorry, I could not."
    assert [r["error"]["code"] for r in script.results] == ["not_found", "invalid_arguments"]
    assert script.statuses == ["error", "error"]


async def test_a_conversation_nothing_saved_is_captured_once_and_recalled(
    capability, story
) -> None:
    memory = StrandsMemory(capability)
    session = MemorySession(story.scope, "conv-1")
    first = Scripted([say("What a lovely name.")])
    agent = agent_for(first, memory, session)
    await run(agent, story.told)
    # Strands' extraction ran after the invocation: add_messages captured the turn.
    hits = await story.store.search(MemorySearchQuery(scope=story.scope, limit=100))
    assert {hit.record.kind for hit in hits} == {"episode"}
    await story.check_captured("conv-1", len(hits))

    # Re-running the capture adds nothing: Strands' flush, and the same batch again.
    assert agent.memory_manager is not None
    await agent.memory_manager.flush()
    store = memory.store(session)
    again = await store.add_messages(
        agent.messages, AddMessagesContext(sequence_numbers=list(range(len(agent.messages))))
    )
    assert again.added == 0
    assert len(await story.store.search(MemorySearchQuery(scope=story.scope, limit=100))) == len(
        hits
    )

    second = Scripted([say("Miso.")])
    await run(agent_for(second, memory, MemorySession(story.scope, "conv-2")), story.asked)
    story.check_told_recalled(second.system_prompts[0])


async def test_equal_texts_at_other_sequence_numbers_are_both_kept(capability, story) -> None:
    store = StrandsMemory(capability).store(MemorySession(story.scope, "conv-1"))
    ok: Messages = [{"role": "user", "content": [{"text": "ok"}]}]
    first = await store.add_messages(ok, AddMessagesContext(sequence_numbers=[0]))
    second = await store.add_messages(ok, AddMessagesContext(sequence_numbers=[2]))
    retried = await store.add_messages(ok, AddMessagesContext(sequence_numbers=[2]))
    assert (first.added, second.added, retried.added) == (1, 1, 0)


async def test_strands_own_tools_and_injection_run_on_the_session_scope(capability, story) -> None:
    memory = StrandsMemory(capability)
    await capability.toolbox(story.other).call("memory_save", {"content": "U2 likes Porto."})
    script = Scripted(
        [
            use("add_memory", {"entries": ["Likes Porto wine."]}),
            use("search_memory", {"query": "Porto", "stores": ["recallstore"]}),
            use("add_memory", {"entries": ["x" * 20_000]}),
            say("Done."),
        ]
    )
    manager = memory.manager(
        MemorySession(story.scope, "conv-1"), search_tool=True, add_tool=True, injection=True
    )
    agent = Agent(model=script, memory_manager=manager, callback_handler=None)
    await agent.invoke_async("Porto?")
    stored, found = script.results[:2]
    assert stored == {"stored": 1}
    assert [entry["content"] for entry in found] == ["Likes Porto wine."]
    assert script.statuses[2] == "error"  # too long: an error result, the run goes on
    hits = await story.store.search(MemorySearchQuery(scope=story.scope, kinds=("fact",)))
    [fact] = [hit.record for hit in hits]
    assert fact.content == "Likes Porto wine."
    assert fact.provenance is not None
    assert fact.provenance.conversation_id == "conv-1"


async def test_a_session_missing_a_scope_field_is_refused(capability) -> None:
    memory = StrandsMemory(capability)
    with pytest.raises(ConfigurationError, match="tenant"):
        memory.manager(MemorySession({"user": "u1"}, "conv-1"))
    with pytest.raises(ConfigurationError, match="MemorySession"):
        memory.manager({"user": "u1"})  # type: ignore[arg-type]


async def test_a_store_failure_reaches_the_host(story) -> None:
    store = InMemoryMemoryStore()
    async with store:
        capability = MemoryCapability(store, scope_fields=("tenant", "user"))
    script = Scripted([say("unreachable")])
    agent = agent_for(script, StrandsMemory(capability), MemorySession(story.scope, "conv-1"))
    with pytest.raises(StoreUnavailableError):
        await agent.invoke_async("Hi")


def test_the_store_is_a_strands_memory_store(capability, story) -> None:
    store = StrandsMemory(capability).store(MemorySession(story.scope, "c"))
    assert isinstance(store, RecallstoreMemoryStore)
    assert [tool.tool_name for tool in store.get_tools()] == [s.name for s in capability.specs]


def test_the_synchronous_call_runs_on_a_sync_store(tmp_path, story) -> None:
    # agent(text) runs each call on an event loop of its own: the store's calls go to
    # the SyncMemoryStore's loop, and Strands flushes the capture itself.
    with SyncMemoryStore(tmp_path / "sync.db") as store:
        capability = MemoryCapability(store.store, scope_fields=("tenant", "user"))
        memory = StrandsMemory(capability, loop=store.loop)
        first = Scripted(
            [
                use("memory_save", story.save_old()),
                use("memory_save", lambda result: story.save_new(story.saved_id(result))),
                say("Noted."),
            ]
        )
        agent_for(first, memory, MemorySession(story.scope, "conv-1"))("I moved to Lisbon.")
        assert first.statuses == ["success", "success"]
        second = Scripted([say("Lisbon.")])
        agent_for(second, memory, MemorySession(story.scope, "conv-2"))("Where do I live?")
        story.check_recalled(second.system_prompts[0])
        episodes = store.search(MemorySearchQuery(scope=story.scope, kinds=("episode",)))
        assert {hit.record.content for hit in episodes} >= {"user: I moved to Lisbon."}
