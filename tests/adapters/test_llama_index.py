"""The LlamaIndex adapter, driven by LlamaIndex's FunctionAgent and its MockFunctionCallingLLM.

The agent's own code paths run on recallstore: ``Memory`` pulls the block into the system
message and flushes old messages into it, and the agent calls the tool spec's tools.
"""

from __future__ import annotations

import pytest
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.tools.tool_spec.base import BaseToolSpec
from tests.adapters._llama_index_model import call, results, scripted, system
from tests.adapters.conftest import Story

from recallstore.adapters.llama_index import (
    LlamaIndexMemory,
    MemorySession,
    RecallstoreMemoryBlock,
)
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.capability import MemoryCapability
from recallstore.errors import ConfigurationError, StoreUnavailableError
from recallstore.records import MemorySearchQuery

# llama-index-workflows lists the agent's members (inspect.getmembers), touching pydantic's
# deprecated attributes: its warnings, not ours.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


async def test_two_conversations(capability, story) -> None:
    memory = LlamaIndexMemory(capability)
    session = MemorySession(story.scope, "conv-1")
    llm, _ = scripted(
        [
            call("memory_save", story.save_old()),
            call("memory_save", lambda shown: story.save_new(story.saved_id(shown[-1]))),
            "Noted.",
        ]
    )
    agent = FunctionAgent(llm=llm, tools=memory.tools(session), system_prompt="You plan trips.")
    reply = await agent.run("I live in Porto. No, Lisbon!", memory=memory.memory(session))
    assert str(reply) == "Noted."
    await story.check_saved_and_superseded("conv-1")

    session2 = MemorySession(story.scope, "conv-2")
    llm2, calls = scripted(["Lisbon.", "Still Lisbon."])
    agent2 = FunctionAgent(llm=llm2, tools=memory.tools(session2), system_prompt="You plan trips.")
    chat = memory.memory(session2)
    await agent2.run("Where do I live?", memory=chat)
    story.check_recalled(system(calls[0]))
    assert system(calls[0]).startswith("You plan trips.")

    # Saved mid-conversation: next conversation's recall, not this prompt (prompt cache).
    await capability.toolbox(story.scope).call("memory_save", {"content": "Likes tea."})
    await agent2.run("Sure?", memory=chat)
    assert system(calls[1]) == system(calls[0])


async def test_another_user_sees_nothing(capability, story) -> None:
    await capability.toolbox(story.scope).call(
        "memory_save", {"content": story.new, "kind": "profile"}
    )
    memory = LlamaIndexMemory(capability)
    session = MemorySession(story.other, "conv-9")
    llm, calls = scripted([call("memory_search", {"query": "Lisbon"}), "Nothing."])
    await FunctionAgent(llm=llm, tools=memory.tools(session)).run(
        "Lisbon?", memory=memory.memory(session)
    )
    story.check_nothing_recalled(system(calls[0]))
    story.check_empty(results(calls[1])[0])


async def test_scope_from_the_model_cannot_widen_a_search(capability, story) -> None:
    await capability.toolbox(story.other).call("memory_save", {"content": "U2 secret."})
    memory = LlamaIndexMemory(capability)
    session = MemorySession(story.scope, "conv-1")
    llm, calls = scripted(
        [
            call("memory_search", {"query": "secret", "scope": story.other}),
            call("memory_list", {}),
            "Done.",
        ]
    )
    await FunctionAgent(llm=llm, tools=memory.tools(session)).run(
        "Hi", memory=memory.memory(session)
    )
    refused, listed = results(calls[-1])
    story.check_refused_scope(refused)
    story.check_empty(listed)


async def test_two_mistakes_in_a_row_do_not_end_the_run(capability, story) -> None:
    memory = LlamaIndexMemory(capability)
    session = MemorySession(story.scope, "conv-1")
    llm, calls = scripted(
        [
            call("memory_invalidate", {"id": "no-such-id"}),
            call("memory_invalidate", {"id": "nor-this-one"}),
            "Could not find them.",
        ]
    )
    agent = FunctionAgent(llm=llm, tools=memory.tools(session))
    handler = agent.run("Forget", memory=memory.memory(session))
    outputs = [
        e.tool_output async for e in handler.stream_events() if isinstance(e, ToolCallResult)
    ]
    assert str(await handler) == "Could not find them."
    assert [output.is_error for output in outputs] == [True, True]
    assert [r["error"]["code"] for r in results(calls[-1])] == ["not_found", "not_found"]


async def test_a_conversation_nobody_saved_is_captured_and_recalled(capability, story) -> None:
    memory = LlamaIndexMemory(capability)
    session = MemorySession(story.scope, "conv-1")
    llm, _ = scripted(["What a lovely name."])
    chat = memory.memory(session)
    await FunctionAgent(llm=llm, tools=memory.tools(session)).run(story.told, memory=chat)
    await story.check_nothing_saved()

    captured = await memory.capture(chat)
    await story.check_captured("conv-1", captured.added)
    assert (await memory.capture(chat)).added == 0

    session2 = MemorySession(story.scope, "conv-2")
    llm2, calls = scripted(["Miso."])
    await FunctionAgent(llm=llm2, tools=memory.tools(session2)).run(
        story.asked, memory=memory.memory(session2)
    )
    story.check_told_recalled(system(calls[0]))


async def test_what_memory_flushes_is_captured_where_capture_puts_it(capability, story) -> None:
    """A long conversation: Memory flushes its oldest messages into the block (aput),
    which captures them; the end-of-conversation capture then adds only the rest."""
    memory = LlamaIndexMemory(capability)
    session = MemorySession(story.scope, "conv-1")
    chat = memory.memory(session, token_limit=60, chat_history_token_ratio=0.5)
    turns = [f"Turn {n}: {'word ' * 12}" for n in range(4)]
    for text in turns:
        llm, _ = scripted([f"Reply to {text[:6]}."])
        await FunctionAgent(llm=llm, tools=memory.tools(session)).run(text, memory=chat)
    flushed = await story.store.search(MemorySearchQuery(scope=story.scope, limit=100))
    assert flushed, "Memory flushed nothing: the test needs a smaller token_limit"
    everything = await chat.aget_all()
    result = await memory.capture(chat)
    assert result.added == len(everything) - len(flushed)
    assert len(result.records) == len(everything)


async def test_the_tools_are_a_tool_spec_with_the_specs_schemas(capability) -> None:
    spec = LlamaIndexMemory(capability).tool_spec(MemorySession({"tenant": "a", "user": "u"}, "c"))
    assert isinstance(spec, BaseToolSpec)
    tools = spec.to_tool_list()
    assert [tool.metadata.name for tool in tools] == [s.name for s in capability.specs]
    for tool, tool_spec in zip(tools, capability.specs, strict=True):
        assert tool.metadata.get_parameters_dict() == tool_spec.input_schema()
        assert "scope" not in tool.metadata.get_parameters_dict()["properties"]
    assert [t.metadata.name for t in spec.to_tool_list(["memory_search"])] == ["memory_search"]


def test_a_session_missing_a_scope_field_is_refused(capability) -> None:
    memory = LlamaIndexMemory(capability)
    with pytest.raises(ConfigurationError, match="user"):
        memory.memory(MemorySession({"tenant": "acme"}, "conv-1"))


async def test_a_store_failure_is_unavailable_to_the_model(story: Story) -> None:
    async with InMemoryMemoryStore() as store:
        memory = LlamaIndexMemory(MemoryCapability(store, scope_fields=("tenant", "user")))
        session = MemorySession(story.scope, "conv-1")
        chat = memory.memory(session)
        await chat.aget()  # the recall, computed while the store is open
    llm, calls = scripted([call("memory_save", {"content": "x"}), "Sorry."])
    handler = FunctionAgent(llm=llm, tools=memory.tools(session)).run("Hi", memory=chat)
    [output] = [
        e.tool_output async for e in handler.stream_events() if isinstance(e, ToolCallResult)
    ]
    await handler
    assert output.is_error is True
    assert isinstance(output.exception, StoreUnavailableError)  # the host sees the cause
    [shown] = results(calls[-1])
    assert shown["error"]["code"] == "unavailable"
    assert "store" not in shown["error"]["message"].lower()


async def test_a_block_made_by_hand_says_how_to_make_it() -> None:
    with pytest.raises(RuntimeError, match=r"LlamaIndexMemory\.block"):
        await RecallstoreMemoryBlock().aget([ChatMessage(role="user", content="hi")])
