"""The OpenAI Agents SDK: strict function tools and dynamic instructions.

:class:`AgentsMemory` gives the capability's memory tools as strict ``FunctionTool``s
and an ``instructions`` function for ``Agent(instructions=...)``. The scope comes from
the run's context (``Runner.run(agent, text, context=MemorySession(...))``, or whatever
``session`` maps your context to), never from the model: a ``scope`` argument is refused
like any unknown argument. The instructions hold the Manual and the recall block,
computed once per conversation from its first user message. A model's mistake comes
back as a tool result (``"ok": false``) it can act on; a store failure fails the run.

Needs the ``openai-agents`` extra.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import (
    MemorySession,
    _as_session,
    _Conversations,
    _result_text,
)
from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult
from recallstore.tools import openai_tool

with _framework_imports("agents", "the OpenAI Agents SDK adapter", "openai-agents"):
    from agents import FunctionTool, RunContextWrapper, Tool
    from agents.tool_context import ToolContext

__all__ = ["AgentsMemory", "MemorySession"]

Instructions = Callable[[RunContextWrapper[Any], Any], Awaitable[str]]
"""What ``Agent(instructions=...)`` accepts: ``(run_context, agent) -> str``."""


def _context_session(context: Any) -> MemorySession:
    return _as_session(context, "the run's context")


class AgentsMemory:
    """Memory for an Agents SDK ``Agent``: ``tools`` and ``instructions``.

    ``session`` maps the run's context to a :class:`MemorySession` (default: the
    context is one).
    """

    def __init__(
        self,
        capability: MemoryCapability,
        *,
        session: Callable[[Any], MemorySession] = _context_session,
    ) -> None:
        self._conversations = _Conversations(capability)
        self._session = session
        # Typed as the SDK's own list (invariant), so ``Agent(tools=memory.tools)`` and
        # ``memory.tools + other_tools`` type-check in the user's code.
        self.tools: list[Tool] = [
            self._function_tool(openai_tool(spec, api="responses")) for spec in capability.specs
        ]
        """The memory tools (strict ``FunctionTool``s), for ``Agent(tools=...)``."""

    def _function_tool(self, definition: dict[str, Any]) -> FunctionTool:
        name = definition["name"]

        async def invoke(context: ToolContext[Any], arguments: str) -> str:
            session = self._session(context.context)
            return _result_text(await self._conversations.call(session, name, arguments))

        return FunctionTool(
            name=name,
            description=definition["description"],
            params_json_schema=definition["parameters"],
            on_invoke_tool=invoke,
            strict_json_schema=True,
        )

    async def instructions(self, run_context: RunContextWrapper[Any], agent: Any) -> str:
        """The Manual and recall block for the run's conversation (computed once)."""
        session = self._session(run_context.context)
        return await self._conversations.instructions(session, _first_user_text(run_context))

    async def capture(self, context: Any, items: Iterable[Any], **options: Any) -> CaptureResult:
        """The end-of-conversation hook: store the conversation (a run's
        ``result.to_input_list()``) as episodes in the context's scope, once each
        (``options`` as for :func:`recallstore.capture.capture`)."""
        return await self._conversations.capture(self._session(context), items, options)

    def instructions_after(self, base: str) -> Instructions:
        """Instructions that are ``base`` followed by :meth:`instructions`."""

        async def instructions(run_context: RunContextWrapper[Any], agent: Any) -> str:
            return f"{base}\n\n{await self.instructions(run_context, agent)}"

        return instructions


def _first_user_text(run_context: RunContextWrapper[Any]) -> str:
    """The conversation's first user message, from the input the run was given."""
    for item in run_context.turn_input:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(
                    str(part.get("text", ""))
                    for part in content
                    if isinstance(part, dict) and part.get("type") == "input_text"
                )
    return ""
