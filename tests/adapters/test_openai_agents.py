"""The OpenAI Agents SDK adapter, driven by the SDK's Runner and its own ScriptedModel, offline."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunConfig, Runner
from agents.exceptions import UserError
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from recallstore.adapters.openai_agents import AgentsMemory, MemorySession
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.capability import MemoryCapability
from recallstore.errors import ConfigurationError, StoreUnavailableError
from recallstore.tools import strict_json_schema

OFFLINE = RunConfig(tracing_disabled=True)


def outputs(call: ModelCall) -> list[Any]:
    """The tool results (parsed) the model is shown in this call, in order."""
    items = call.input if isinstance(call.input, list) else []
    return [
        json.loads(item["output"])
        for item in items
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def tool_call(name: str, arguments: dict[str, Any] | Callable[[Any], dict[str, Any]]) -> ModelStep:
    def respond(call: ModelCall) -> list[Any]:
        args = arguments(outputs(call)[-1]) if callable(arguments) else arguments
        return [function_call(name, args, call_id=f"call-{len(outputs(call))}")]

    return ModelStep.respond(respond)


def agent_for(model: ScriptedModel, memory: AgentsMemory) -> Agent[MemorySession]:
    return Agent(
        name="assistant", model=model, tools=memory.tools, instructions=memory.instructions
    )


async def test_two_conversations(capability, story) -> None:
    memory = AgentsMemory(capability)
    first = ScriptedModel(
        [
            tool_call("memory_save", story.save_old()),
            tool_call("memory_save", lambda result: story.save_new(story.saved_id(result))),
            [assistant_message("Noted.")],
        ]
    )
    session = MemorySession(story.scope, "conv-1")
    result = await Runner.run(
        agent_for(first, memory),
        "I live in Porto. No, Lisbon!",
        context=session,
        run_config=OFFLINE,
    )
    assert result.final_output == "Noted."
    await story.check_saved_and_superseded("conv-1")

    second = ScriptedModel([[assistant_message("Lisbon.")], [assistant_message("Still Lisbon.")]])
    agent = agent_for(second, memory)
    session2 = MemorySession(story.scope, "conv-2")
    run1 = await Runner.run(agent, "Where do I live?", context=session2, run_config=OFFLINE)
    story.check_recalled(second.calls[0].system_instructions)

    await capability.toolbox(story.scope).call("memory_save", {"content": "Likes tea."})
    follow_up: list[Any] = [*run1.to_input_list(), {"role": "user", "content": "Sure?"}]
    await Runner.run(agent, follow_up, context=session2, run_config=OFFLINE)
    assert second.calls[1].system_instructions == second.calls[0].system_instructions


def test_tools_are_strict_and_match_the_specs(capability) -> None:
    memory = AgentsMemory(capability)
    assert [tool.name for tool in memory.tools] == [spec.name for spec in capability.specs]
    for tool, spec in zip(memory.tools, capability.specs, strict=True):
        assert isinstance(tool, FunctionTool)
        assert tool.strict_json_schema is True
        assert tool.params_json_schema == strict_json_schema(spec.input_schema())
        assert "scope" not in tool.params_json_schema["properties"]


async def test_scope_from_the_model_is_refused(capability, story) -> None:
    await capability.toolbox(story.other).call("memory_save", {"content": "U2 secret."})
    model = ScriptedModel(
        [
            tool_call("memory_list", {"scope": story.other}),
            tool_call("memory_list", {"kinds": None, "tags": None, "limit": None}),
            ModelStep.respond(lambda call: [assistant_message(json.dumps(outputs(call)))]),
        ]
    )
    session = MemorySession(story.scope, "conv-1")
    await Runner.run(
        agent_for(model, AgentsMemory(capability)), "Hi", context=session, run_config=OFFLINE
    )
    refused, listed = outputs(model.calls[-1])
    story.check_refused_scope(refused)
    story.check_empty(listed)


async def test_another_user_sees_nothing(capability, story) -> None:
    await capability.toolbox(story.scope).call(
        "memory_save", {"content": story.new, "kind": "profile"}
    )
    model = ScriptedModel(
        [tool_call("memory_search", {"query": "Lisbon"}), [assistant_message("Nothing.")]]
    )
    session = MemorySession(story.other, "conv-9")
    await Runner.run(
        agent_for(model, AgentsMemory(capability)), "Lisbon?", context=session, run_config=OFFLINE
    )
    story.check_nothing_recalled(model.calls[0].system_instructions)
    story.check_empty(outputs(model.calls[1])[0])


async def test_not_found_is_a_result_the_run_survives(capability, story) -> None:
    model = ScriptedModel(
        [
            tool_call("memory_invalidate", {"id": "no-such-id", "reason": None}),
            tool_call("memory_invalidate", {"id": "nor-this-one", "reason": None}),
            [assistant_message("Could not find them.")],
        ]
    )
    session = MemorySession(story.scope, "conv-1")
    memory = AgentsMemory(capability)
    result = await Runner.run(
        agent_for(model, memory), "Forget", context=session, run_config=OFFLINE
    )
    assert result.final_output == "Could not find them."
    assert [r["error"]["code"] for r in outputs(model.calls[-1])] == ["not_found", "not_found"]


async def test_instructions_after_a_base_prompt(capability, story) -> None:
    await capability.toolbox(story.scope).call("memory_save", story.save_old())
    memory = AgentsMemory(capability, session=lambda context: context["memory"])
    model = ScriptedModel([[assistant_message("Hi.")]])
    agent: Agent[dict[str, MemorySession]] = Agent(
        name="assistant",
        model=model,
        tools=memory.tools,
        instructions=memory.instructions_after("You are a travel agent."),
    )
    context = {"memory": MemorySession(story.scope, "conv-3")}
    await Runner.run(agent, "Hello", context=context, run_config=OFFLINE)
    instructions = model.calls[0].system_instructions
    assert instructions is not None
    assert instructions.startswith("You are a travel agent.\n\n## Memory")
    assert story.old in instructions


async def test_a_context_that_is_not_a_session_is_refused(capability: MemoryCapability) -> None:
    model = ScriptedModel([[assistant_message("Hi.")]])
    with pytest.raises(ConfigurationError, match="MemorySession"):
        await Runner.run(
            agent_for(model, AgentsMemory(capability)), "Hello", context=None, run_config=OFFLINE
        )


async def test_the_recall_follows_input_given_as_parts(capability, story) -> None:
    await capability.toolbox(story.scope).call("memory_save", {"content": "Plays the cello."})
    model = ScriptedModel([[assistant_message("Yes.")]])
    text = [{"type": "input_text", "text": "Do I play the cello?"}]
    conversation: list[Any] = [{"role": "user", "content": text}]
    session = MemorySession(story.scope, "conv-4")
    memory = AgentsMemory(capability)
    await Runner.run(agent_for(model, memory), conversation, context=session, run_config=OFFLINE)
    assert "Plays the cello." in (model.calls[0].system_instructions or "")


async def test_a_store_failure_ends_the_run(story) -> None:
    store = InMemoryMemoryStore()
    async with store:
        memory = AgentsMemory(MemoryCapability(store, scope_fields=("tenant", "user")))
    # Closed: the host must learn its memory is down, not the model.
    model = ScriptedModel([tool_call("memory_list", {}), [assistant_message("unreachable")]])
    agent: Agent[MemorySession] = Agent(name="assistant", model=model, tools=memory.tools)
    session = MemorySession(story.scope, "conv-1")
    # The SDK wraps every tool exception in its UserError; the cause is ours.
    with pytest.raises(UserError) as caught:
        await Runner.run(agent, "Hi", context=session, run_config=OFFLINE)
    assert isinstance(caught.value.__cause__, StoreUnavailableError)


async def test_the_end_of_conversation_hook_keeps_what_no_tool_saved(capability, story) -> None:
    memory = AgentsMemory(capability)
    first = ScriptedModel([[assistant_message("What a lovely name.")]])
    session = MemorySession(story.scope, "conv-1")
    result = await Runner.run(
        agent_for(first, memory), story.told, context=session, run_config=OFFLINE
    )
    await story.check_nothing_saved()

    captured = await memory.capture(session, result.to_input_list())
    await story.check_captured("conv-1", captured.added)
    assert (await memory.capture(session, result.to_input_list())).added == 0

    second = ScriptedModel([[assistant_message("Miso.")]])
    session2 = MemorySession(story.scope, "conv-2")
    await Runner.run(agent_for(second, memory), story.asked, context=session2, run_config=OFFLINE)
    story.check_told_recalled(second.calls[0].system_instructions)
