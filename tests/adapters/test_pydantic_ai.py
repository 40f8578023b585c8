"""The pydantic-ai adapter, driven by pydantic-ai's own Agent and FunctionModel, offline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from recallstore.adapters.pydantic_ai import MemorySession, MemoryToolset
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.capability import MemoryCapability
from recallstore.errors import ConfigurationError, StoreUnavailableError

Step = Callable[[list[ModelMessage]], ModelResponse]


class Script:
    """A FunctionModel that plays ``steps`` in order and records what it was shown."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.instructions: list[str | None] = []
        self.tool_results: list[Any] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.instructions.append(info.instructions)
        last = messages[-1]
        if isinstance(last, ModelRequest):
            self.tool_results += [p.content for p in last.parts if isinstance(p, ToolReturnPart)]
        return self.steps.pop(0)(messages)

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self)


def call(name: str, arguments: dict[str, Any] | Callable[[Any], dict[str, Any]]) -> Step:
    def step(messages: list[ModelMessage]) -> ModelResponse:
        args = arguments(last_result(messages)) if callable(arguments) else arguments
        return ModelResponse(parts=[ToolCallPart(name, args)])

    return step


def reply(text: str) -> Step:
    return lambda messages: ModelResponse(parts=[TextPart(text)])


def last_result(messages: list[ModelMessage]) -> Any:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    [part] = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    return part.content


def agent_for(script: Script, capability: MemoryCapability) -> Agent[MemorySession, str]:
    return Agent(script.model, deps_type=MemorySession, toolsets=[MemoryToolset(capability)])


async def test_two_conversations(capability, story) -> None:
    first = Script(
        [
            call("memory_save", story.save_old()),
            call("memory_save", lambda result: story.save_new(story.saved_id(result))),
            reply("Noted."),
        ]
    )
    deps = MemorySession(story.scope, "conv-1")
    result = await agent_for(first, capability).run("I live in Porto. No, Lisbon!", deps=deps)
    assert result.output == "Noted."
    assert all(r["ok"] for r in first.tool_results)
    await story.check_saved_and_superseded("conv-1")

    second = Script([reply("You live in Lisbon."), reply("Still Lisbon.")])
    agent = agent_for(second, capability)
    deps2 = MemorySession({**story.scope, "locale": "pt"}, "conv-2")
    run1 = await agent.run("Where do I live?", deps=deps2)
    story.check_recalled(second.instructions[0])

    # Computed once: a memory saved meanwhile does not change conversation 2's prompt.
    await capability.toolbox(story.scope).call("memory_save", {"content": "Likes tea."})
    await agent.run("Sure?", deps=deps2, message_history=run1.all_messages())
    assert second.instructions[1] == second.instructions[0]


async def test_scope_from_the_model_is_refused(capability, story) -> None:
    await capability.toolbox(story.other).call("memory_save", {"content": "U2 secret."})
    script = Script(
        [
            call("memory_list", {"scope": story.other}),
            call("memory_list", {"ctx": story.other}),
            call("memory_list", {}),
            reply("ok"),
        ]
    )
    deps = MemorySession(story.scope, "conv-1")
    await agent_for(script, capability).run("What do you know?", deps=deps)
    refused, ctx_argument, listed = script.tool_results
    story.check_refused_scope(refused)
    assert ctx_argument["error"]["fields"] == ["ctx"]  # not the run context's parameter
    story.check_empty(listed)


async def test_another_user_sees_nothing(capability, story) -> None:
    toolbox = capability.toolbox(story.scope)
    await toolbox.call("memory_save", {"content": story.new, "kind": "profile"})
    script = Script([call("memory_search", {"query": "Lisbon"}), reply("Nothing.")])
    deps = MemorySession(story.other, "conv-9")
    await agent_for(script, capability).run("Where do I live? Lisbon?", deps=deps)
    story.check_nothing_recalled(script.instructions[0])
    story.check_empty(script.tool_results[0])


async def test_two_not_found_results_do_not_end_the_run(capability, story) -> None:
    # Agent defaults: one retry per tool. A model mistake must not spend it.
    script = Script(
        [
            call("memory_invalidate", {"id": "no-such-id"}),
            call("memory_invalidate", {"id": "nor-this-one"}),
            call("memory_save", {"content": story.new, "tags": ["x"] * 20}),
            reply("Sorry, I could not find those."),
        ]
    )
    deps = MemorySession(story.scope, "conv-1")
    result = await agent_for(script, capability).run("Forget where I live.", deps=deps)
    assert result.output == "Sorry, I could not find those."
    codes = [r["error"]["code"] for r in script.tool_results]
    assert codes == ["not_found", "not_found", "invalid_arguments"]


async def test_instructions_can_be_placed_by_the_host(capability, story) -> None:
    await capability.toolbox(story.scope).call("memory_save", story.save_old())
    toolset = MemoryToolset(capability, session=lambda deps: deps["memory"], add_instructions=False)
    script = Script([reply("Hi.")])
    agent: Agent[dict[str, MemorySession], str] = Agent(
        script.model,
        deps_type=dict[str, MemorySession],
        toolsets=[toolset],
        instructions=["You are a travel agent.", toolset.memory_instructions],
    )
    await agent.run("Hello", deps={"memory": MemorySession(story.scope, "conv-3")})
    instructions = script.instructions[0]
    assert instructions is not None
    assert instructions.startswith("You are a travel agent.")
    assert story.old in instructions
    assert instructions.count("## Memory") == 1  # the toolset did not add it a second time


async def test_deps_that_are_not_a_session_are_refused(capability) -> None:
    script = Script([reply("Hi.")])
    agent: Agent[str, str] = Agent(
        script.model, deps_type=str, toolsets=[MemoryToolset(capability)]
    )
    with pytest.raises(ConfigurationError, match="MemorySession") as caught:
        await agent.run("Hello", deps="u1")
    assert "'u1'" in str(caught.value)


async def test_a_session_missing_a_scope_field_is_refused(capability) -> None:
    script = Script([reply("Hi.")])
    agent = agent_for(script, capability)
    with pytest.raises(ConfigurationError, match="tenant"):
        await agent.run("Hello", deps=MemorySession({"user": "u1"}, "conv-1"))


async def test_the_recall_follows_a_prompt_given_as_parts(capability, story) -> None:
    await capability.toolbox(story.scope).call("memory_save", {"content": "Plays the cello."})
    script = Script([reply("Yes.")])
    deps = MemorySession(story.scope, "conv-4")
    await agent_for(script, capability).run(["Do I play", "the cello?"], deps=deps)
    assert "Plays the cello." in (script.instructions[0] or "")


async def test_a_store_failure_ends_the_run(story) -> None:
    store = InMemoryMemoryStore()
    async with store:
        capability = MemoryCapability(store, scope_fields=("tenant", "user"))
    # Closed: the host must learn its memory is down, not the model.
    script = Script([call("memory_list", {}), reply("unreachable")])
    agent: Agent[MemorySession, str] = Agent(
        script.model,
        deps_type=MemorySession,
        toolsets=[MemoryToolset(capability, add_instructions=False)],
    )
    with pytest.raises(StoreUnavailableError):
        await agent.run("Hi", deps=MemorySession(story.scope, "conv-1"))


async def test_the_end_of_conversation_hook_keeps_what_no_tool_saved(capability, story) -> None:
    memory = MemoryToolset(capability)
    first = Script([reply("What a lovely name.")])
    deps = MemorySession(story.scope, "conv-1")
    agent = Agent(first.model, deps_type=MemorySession, toolsets=[memory])
    result = await agent.run(story.told, deps=deps)
    await story.check_nothing_saved()

    captured = await memory.capture(deps, result.all_messages())
    await story.check_captured("conv-1", captured.added)
    assert (await memory.capture(deps, result.all_messages())).added == 0

    second = Script([reply("Miso.")])
    agent = Agent(second.model, deps_type=MemorySession, toolsets=[memory])
    await agent.run(story.asked, deps=MemorySession(story.scope, "conv-2"))
    story.check_told_recalled(second.instructions[0])
