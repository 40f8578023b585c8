"""LangChain: the memory tools as ``StructuredTool``s, and the memory part of a system prompt.

:class:`LangChainMemory` gives the capability's memory tools as ``StructuredTool``s
whose JSON schemas come from the tool specs. The scope comes from the run's config
(``config={"configurable": {"memory_session": MemorySession(...)}}``, or whatever
``session`` maps your config to), never from the model: a ``scope`` argument is
refused like any unknown argument. A model's mistake comes back as a ``ToolMessage``
with ``status="error"`` holding the structured error, which the model can act on; a
store failure raises. :meth:`LangChainMemory.instructions` gives the Manual and the
recall block for the system message, computed once per conversation.

Needs the ``langchain`` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import (
    MemorySession,
    _as_session,
    _Conversations,
    _is_error,
    _result_text,
)
from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult

with _framework_imports("langchain_core", "the LangChain adapter", "langchain"):
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import StructuredTool, ToolException

__all__ = ["SESSION_KEY", "LangChainMemory", "MemorySession"]

SESSION_KEY = "memory_session"
"""Where the default ``session`` looks in ``config["configurable"]``."""


def _config_session(config: RunnableConfig) -> MemorySession:
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    return _as_session(configurable.get(SESSION_KEY), f"config['configurable'][{SESSION_KEY!r}]")


class LangChainMemory:
    """Memory for a LangChain chat model: ``tools`` and ``instructions``.

    ``session`` maps a run's ``RunnableConfig`` to a :class:`MemorySession` (default:
    ``config["configurable"]["memory_session"]``).
    """

    def __init__(
        self,
        capability: MemoryCapability,
        *,
        session: Callable[[RunnableConfig], MemorySession] = _config_session,
    ) -> None:
        self._conversations = _Conversations(capability)
        self._session = session
        self.tools: list[StructuredTool] = [
            self._structured_tool(spec.name, spec.description, spec.input_schema())
            for spec in capability.specs
        ]
        """The memory tools, for ``model.bind_tools(...)`` and to run the model's calls."""

    def _structured_tool(
        self, name: str, description: str, schema: dict[str, Any]
    ) -> StructuredTool:
        async def run(config: RunnableConfig, **arguments: Any) -> str:
            result = await self._conversations.call(self._session(config), name, arguments)
            if _is_error(result):
                # Becomes a ToolMessage with status="error" (handle_tool_error below).
                raise ToolException(_result_text(result))
            return _result_text(result)

        return StructuredTool.from_function(
            coroutine=run,
            name=name,
            description=description,
            args_schema=schema,
            handle_tool_error=True,
        )

    async def capture(
        self, config: RunnableConfig, messages: Iterable[Any], **options: Any
    ) -> CaptureResult:
        """The end-of-conversation hook: store the conversation's messages (a graph's
        ``state["messages"]``) as episodes in the config's scope, once each (``options``
        as for :func:`recallstore.capture.capture`)."""
        return await self._conversations.capture(self._session(config), messages, options)

    async def instructions(self, config: RunnableConfig, first_user_text: str) -> str:
        """The Manual and recall block for the config's conversation (computed once)."""
        return await self._conversations.instructions(self._session(config), first_user_text)
