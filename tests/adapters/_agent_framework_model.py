"""A scripted chat client for Microsoft Agent Framework: the framework's own extension
point (``BaseChatClient`` with its ``FunctionInvocationLayer``), offline.

Each step is the assistant's contents, or a function of the messages the model is shown
returning them; every call's messages and options (``options["instructions"]`` is the
system prompt) are kept in ``calls``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from agent_framework import (
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
)

Step = list[Any] | Callable[[list[Message]], list[Any]]


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Answers each model call with the next step of the script."""

    def __init__(self, steps: Sequence[Step]) -> None:
        super().__init__()
        self.steps = list(steps)
        self.calls: list[tuple[list[Message], dict[str, Any]]] = []

    async def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> ChatResponse[Any]:
        shown = list(messages)
        self.calls.append((shown, dict(options)))
        step = self.steps.pop(0)
        contents = step(shown) if callable(step) else step
        return ChatResponse(messages=[Message(role="assistant", contents=contents)])

    def instructions(self, call: int) -> str | None:
        """The system prompt of model call ``call``."""
        value = self.calls[call][1].get("instructions")
        return None if value is None else str(value)


def call(name: str, arguments: dict[str, Any], call_id: str = "call-1") -> list[Any]:
    """The assistant's contents calling tool ``name`` with ``arguments``."""
    return [Content.from_function_call(call_id=call_id, name=name, arguments=json.dumps(arguments))]


def results(messages: list[Message]) -> list[Any]:
    """The function results (parsed) the model is shown, in order."""
    return [
        json.loads(str(content.result))
        for message in messages
        for content in message.contents
        if content.type == "function_result"
    ]
