"""LlamaIndex's own ``MockFunctionCallingLLM``, scripted: each step answers the messages
the model is shown (kept in ``calls``) with text or a tool call."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM

Step = Callable[[list[ChatMessage]], ChatMessage]


def scripted(steps: Sequence[Step | str]) -> tuple[MockFunctionCallingLLM, list[list[ChatMessage]]]:
    """The mock LLM playing ``steps`` (text, or a function of the messages shown), and
    the messages of every call."""
    remaining = list(steps)
    calls: list[list[ChatMessage]] = []

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        calls.append(list(messages))
        step = remaining.pop(0)
        return (
            step(list(messages)) if callable(step) else ChatMessage(role="assistant", content=step)
        )

    return MockFunctionCallingLLM(response_generator=respond), calls


def call(name: str, arguments: dict[str, Any] | Callable[[list[Any]], dict[str, Any]]) -> Step:
    """A step calling tool ``name``; ``arguments`` may read the results shown so far."""

    def step(messages: list[ChatMessage]) -> ChatMessage:
        args = arguments(results(messages)) if callable(arguments) else arguments
        block = ToolCallBlock(
            tool_call_id=f"call-{len(messages)}", tool_name=name, tool_kwargs=args
        )
        return ChatMessage(role="assistant", blocks=[block])

    return step


def results(messages: list[ChatMessage]) -> list[Any]:
    """The tool results (parsed) the model is shown, in order."""
    return [json.loads(m.content or "") for m in messages if m.role == MessageRole.TOOL]


def system(messages: list[ChatMessage]) -> str:
    """The system prompt the model is shown (every system message)."""
    return "\n".join(m.content or "" for m in messages if m.role == MessageRole.SYSTEM)
