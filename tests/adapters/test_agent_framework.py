"""The Agent Framework adapter, driven by the framework's Agent loop and a scripted client.

The agent's own code paths run on recallstore: its context-provider pipeline puts the
recall in the system prompt before the run and captures after it, and its function
invocation loop runs the memory tools.
"""

from __future__ import annotations

import pytest
from agent_framework import Agent, MiddlewareFailure
from tests.adapters._agent_framework_model import ScriptedClient, call, results
from tests.adapters.conftest import Story

from recallstore.adapters.agent_framework import MemorySession, RecallstoreContextProvider
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.capability import MemoryCapability
from recallstore.errors import ConfigurationError, StoreUnavailableError
from recallstore.records import MemorySearchQuery


def agent_for(client: ScriptedClient, memory: RecallstoreContextProvider) -> Agent:
    return Agent(client=client, instructions="You plan trips.", context_providers=[memory])


async def test_two_conversations(capability, story) -> None:
    memory = RecallstoreContextProvider(capability, capture=False)
    first = ScriptedClient(
        [
            call("memory_save", story.save_old()),
            lambda shown: call("memory_save", story.save_new(story.saved_id(results(shown)[-1]))),
            ["Noted."],
        ]
    )
    reply = await agent_for(first, memory).run(
        "I live in Porto. No, Lisbon!", session=memory.session(story.scope, "conv-1")
    )
    assert reply.text == "Noted."
    await story.check_saved_and_superseded("conv-1")

    second = ScriptedClient([["Lisbon."], ["Still Lisbon."]])
    agent = agent_for(second, memory)
    session = memory.session(story.scope, "conv-2")
    await agent.run("Where do I live?", session=session)
    story.check_recalled(second.instructions(0))
    assert str(second.instructions(0)).startswith("You plan trips.")

    # Saved mid-conversation: next conversation's recall, not this prompt (prompt cache).
    await capability.toolbox(story.scope).call("memory_save", {"content": "Likes tea."})
    await agent.run("Sure?", session=session)
    assert second.instructions(1) == second.instructions(0)


async def test_another_user_sees_nothing(capability, story) -> None:
    await capability.toolbox(story.scope).call(
        "memory_save", {"content": story.new, "kind": "profile"}
    )
    memory = RecallstoreContextProvider(capability, capture=False)
    client = ScriptedClient([call("memory_search", {"query": "Lisbon"}), ["Nothing."]])
    await agent_for(client, memory).run("Lisbon?", session=memory.session(story.other, "c-9"))
    story.check_nothing_recalled(client.instructions(0))
    story.check_empty(results(client.calls[1][0])[0])


async def test_scope_from_the_model_cannot_widen_a_search(capability, story) -> None:
    await capability.toolbox(story.other).call("memory_save", {"content": "U2 secret."})
    memory = RecallstoreContextProvider(capability, capture=False)
    client = ScriptedClient(
        [
            call("memory_search", {"query": "secret", "scope": story.other}),
            call("memory_list", {}, "call-2"),
            ["Done."],
        ]
    )
    await agent_for(client, memory).run("Hi", session=memory.session(story.scope, "conv-1"))
    refused, listed = results(client.calls[-1][0])
    story.check_refused_scope(refused)
    story.check_empty(listed)


async def test_two_mistakes_in_a_row_do_not_end_the_run(capability, story) -> None:
    memory = RecallstoreContextProvider(capability)
    client = ScriptedClient(
        [
            call("memory_invalidate", {"id": "no-such-id"}),
            call("memory_save", {"content": 42}, "call-2"),  # a wrong type, too
            call("memory_invalidate", {"id": "nor-this-one"}, "call-3"),
            ["Could not find them."],
        ]
    )
    reply = await agent_for(client, memory).run(
        "Forget", session=memory.session(story.scope, "conv-1")
    )
    assert reply.text == "Could not find them."
    codes = [result["error"]["code"] for result in results(client.calls[-1][0])]
    assert codes == ["not_found", "invalid_arguments", "not_found"]


async def test_a_conversation_nobody_saved_is_captured_and_recalled(capability, story) -> None:
    memory = RecallstoreContextProvider(capability)
    agent = agent_for(ScriptedClient([["What a lovely name."], ["Yes, Miso."]]), memory)
    session = memory.session(story.scope, "conv-1")
    await agent.run(story.told, session=session)  # after_run captures
    hits = await story.store.search(MemorySearchQuery(scope=story.scope, limit=100))
    await story.check_captured("conv-1", len(hits))
    # A second turn adds only its own two messages; capturing it all again adds nothing.
    await agent.run("Is it a nice name?", session=session)
    again = await story.store.search(MemorySearchQuery(scope=story.scope, limit=100))
    assert len(again) == len(hits) + 2
    history = session.state["in_memory"]["messages"]
    assert (await memory.capture(session, history)).added == 0

    second = ScriptedClient([["Miso."]])
    await agent_for(second, memory).run(story.asked, session=memory.session(story.scope, "c-2"))
    story.check_told_recalled(second.instructions(0))


async def test_a_session_without_a_scope_is_refused(capability) -> None:
    memory = RecallstoreContextProvider(capability)
    agent = agent_for(ScriptedClient([["Hi."]]), memory)
    with pytest.raises(ConfigurationError, match=r"provider\.session\(scope"):
        await agent.run("Hello", session=agent.create_session())
    with pytest.raises(ConfigurationError, match="user"):
        memory.session({"tenant": "acme"}, "conv-1")


async def test_a_host_mapping_of_its_own_session(capability, story) -> None:
    await capability.toolbox(story.scope).call("memory_save", story.save_old())
    memory = RecallstoreContextProvider(
        capability, session=lambda s: MemorySession(s.state["app"]["scope"], s.session_id)
    )
    client = ScriptedClient([["Hi."]])
    agent = agent_for(client, memory)
    session = agent.create_session(session_id="conv-7")
    session.state["app"] = {"scope": story.scope}
    await agent.run("Hello", session=session)
    assert story.old in str(client.instructions(0))


async def test_a_store_failure_ends_the_run(story: Story) -> None:
    async with InMemoryMemoryStore() as store:
        memory = RecallstoreContextProvider(
            MemoryCapability(store, scope_fields=("tenant", "user")), capture=False
        )
        session = memory.session(story.scope, "conv-1")
        client = ScriptedClient([["Hi."], call("memory_list", {}), ["unreachable"]])
        agent = agent_for(client, memory)
        await agent.run("Hi", session=session)
    # Closed: the host must learn its memory is down, not the model.
    with pytest.raises(MiddlewareFailure) as caught:
        await agent.run("Hi again", session=session)
    assert isinstance(caught.value.__cause__, StoreUnavailableError)


async def test_the_tools_alone_on_an_agent(capability, story) -> None:
    memory = RecallstoreContextProvider(capability)
    client = ScriptedClient([call("memory_save", {"content": story.new}), ["Saved."]])
    agent = Agent(client=client, tools=memory.tools)
    await agent.run("I live in Lisbon.", session=memory.session(story.scope, "conv-1"))
    hits = await story.store.search(MemorySearchQuery(scope=story.scope))
    assert [hit.record.content for hit in hits] == [story.new]
    assert client.instructions(0) is None  # without the provider: no recall


async def test_the_hosts_own_tools_run_beside_the_memory_tools(capability, story) -> None:
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}."

    memory = RecallstoreContextProvider(capability, capture=False)
    client = ScriptedClient(
        [call("weather", {"city": "Lisbon"}), call("memory_list", {}, "call-2"), ["Sunny."]]
    )
    agent = Agent(client=client, tools=[weather], context_providers=[memory])
    await agent.run("Weather?", session=memory.session(story.scope, "conv-1"))
    shown = [
        c.result for m in client.calls[-1][0] for c in m.contents if c.type == "function_result"
    ]
    assert shown[0] == "Sunny in Lisbon."
    story.check_empty(shown[1])
