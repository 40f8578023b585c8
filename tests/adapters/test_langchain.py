"""The LangChain adapter, driven by langchain-core's GenericFakeChatModel, offline."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from recallstore.adapters.langchain import SESSION_KEY, LangChainMemory, MemorySession
from recallstore.errors import ConfigurationError

Step = AIMessage | Callable[[], AIMessage]


class Seen(AsyncCallbackHandler):
    """Records the messages every chat-model call was given."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.prompts += messages


class Chat:
    """One conversation: a fake chat model playing ``steps``, memory tools run by the adapter."""

    def __init__(self, memory: LangChainMemory, session: MemorySession, steps: list[Step]) -> None:
        self.memory = memory
        self.seen = Seen()
        self.config: RunnableConfig = {
            "configurable": {SESSION_KEY: session},
            "callbacks": [self.seen],
        }
        self.model = GenericFakeChatModel(messages=self._play(steps))
        self.messages: list[BaseMessage] = []
        self.results: list[ToolMessage] = []

    @staticmethod
    def _play(steps: list[Step]) -> Iterator[AIMessage]:
        for step in steps:
            yield step() if callable(step) else step

    async def send(self, text: str) -> str:
        if not self.messages:
            self.messages.append(SystemMessage(await self.memory.instructions(self.config, text)))
        self.messages.append(HumanMessage(text))
        tools = {tool.name: tool for tool in self.memory.tools}
        while True:
            answer = await self.model.ainvoke(self.messages, self.config)
            self.messages.append(answer)
            if not isinstance(answer, AIMessage) or not answer.tool_calls:
                return str(answer.content)
            for call in answer.tool_calls:
                result = await tools[call["name"]].ainvoke(
                    {**call, "type": "tool_call"}, self.config
                )
                self.results.append(result)
                self.messages.append(result)

    def last_result(self) -> Any:
        return json.loads(str(self.results[-1].content))


def calls(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{name}"}])


async def test_two_conversations(capability, story) -> None:
    memory = LangChainMemory(capability)
    chat: Chat
    chat = Chat(
        memory,
        MemorySession(story.scope, "conv-1"),
        [
            calls("memory_save", story.save_old()),
            lambda: calls("memory_save", story.save_new(story.saved_id(chat.last_result()))),
            AIMessage(content="Noted."),
        ],
    )
    assert await chat.send("I live in Porto. No, Lisbon!") == "Noted."
    await story.check_saved_and_superseded("conv-1")

    second = Chat(
        memory,
        MemorySession(story.scope, "conv-2"),
        [AIMessage(content="Lisbon."), AIMessage(content="Still Lisbon.")],
    )
    await second.send("Where do I live?")
    system = second.seen.prompts[0][0]
    assert isinstance(system, SystemMessage)
    story.check_recalled(str(system.content))

    await capability.toolbox(story.scope).call("memory_save", {"content": "Likes tea."})
    assert await memory.instructions(second.config, "Sure?") == system.content


async def test_scope_from_the_model_is_refused(capability, story) -> None:
    await capability.toolbox(story.other).call("memory_save", {"content": "U2 secret."})
    chat = Chat(
        LangChainMemory(capability),
        MemorySession(story.scope, "conv-1"),
        [
            calls("memory_list", {"scope": story.other}),
            calls("memory_list", {"config": {"configurable": {SESSION_KEY: "u2"}}}),
            calls("memory_list", {}),
            AIMessage(content="ok"),
        ],
    )
    await chat.send("What do you know?")
    refused, config_arg, listed = chat.results
    assert refused.status == "error"
    story.check_refused_scope(refused.content)
    # A `config` argument cannot replace the run's config: the host's session still holds.
    story.check_empty(config_arg.content)
    story.check_empty(listed.content)


async def test_another_user_sees_nothing(capability, story) -> None:
    await capability.toolbox(story.scope).call(
        "memory_save", {"content": story.new, "kind": "profile"}
    )
    chat = Chat(
        LangChainMemory(capability),
        MemorySession(story.other, "conv-9"),
        [calls("memory_search", {"query": "Lisbon"}), AIMessage(content="Nothing.")],
    )
    await chat.send("Lisbon?")
    story.check_nothing_recalled(str(chat.seen.prompts[0][0].content))
    story.check_empty(chat.results[0].content)


async def test_not_found_is_an_error_message_the_run_survives(capability, story) -> None:
    chat = Chat(
        LangChainMemory(capability),
        MemorySession(story.scope, "conv-1"),
        [
            calls("memory_invalidate", {"id": "no-such-id"}),
            calls("memory_invalidate", {"id": "nor-this-one"}),
            AIMessage(content="Could not find them."),
        ],
    )
    assert await chat.send("Forget it") == "Could not find them."
    assert [r.status for r in chat.results] == ["error", "error"]
    assert [json.loads(str(r.content))["error"]["code"] for r in chat.results] == [
        "not_found",
        "not_found",
    ]


async def test_a_config_without_a_session_is_refused(capability) -> None:
    memory = LangChainMemory(capability)
    with pytest.raises(ConfigurationError, match="memory_session"):
        await memory.instructions({"configurable": {"user": "u1"}}, "Hello")
    with pytest.raises(ConfigurationError, match="memory_session"):
        await memory.tools[1].ainvoke({"query": "x"}, {"configurable": {}})


async def test_the_end_of_conversation_hook_keeps_what_no_tool_saved(capability, story) -> None:
    memory = LangChainMemory(capability)
    first = Chat(memory, MemorySession(story.scope, "conv-1"), [AIMessage("What a lovely name.")])
    await first.send(story.told)
    await story.check_nothing_saved()

    captured = await memory.capture(first.config, first.messages)
    await story.check_captured("conv-1", captured.added)
    assert (await memory.capture(first.config, first.messages)).added == 0

    second = Chat(memory, MemorySession(story.scope, "conv-2"), [AIMessage("Miso.")])
    await second.send(story.asked)
    system = second.seen.prompts[0][0]
    assert isinstance(system, SystemMessage)
    story.check_told_recalled(str(system.content))
