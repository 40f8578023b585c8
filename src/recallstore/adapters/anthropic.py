"""Anthropic Messages API: the memory tools, the system prompt, and the tool-use loop step.

:class:`AnthropicMemory` gives the tool definitions for ``messages.create(tools=...)``,
the memory part of the system prompt (Manual and recall block, computed once per
conversation) and :meth:`AnthropicMemory.tool_results`, which turns a response's
``tool_use`` blocks for memory tools into ``tool_result`` blocks: a model's mistake
(bad arguments, an unknown id, a ``scope`` argument) becomes a result with
``is_error: true`` the model can act on; a store failure raises. The scope is the
host's :class:`MemorySession`, passed with every call, never the model's.

Needs the ``anthropic`` extra (for the SDK's block and parameter types).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import (
    MemorySession,
    _Conversations,
    _is_error,
    _result_text,
)
from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult
from recallstore.tools import anthropic_tool

with _framework_imports("anthropic", "the Anthropic adapter", "anthropic"):
    from anthropic.types import ToolParam, ToolResultBlockParam

__all__ = ["AnthropicMemory", "MemorySession"]


class AnthropicMemory:
    """Memory for a Messages API tool-use loop: ``tools``, ``system`` and ``tool_results``."""

    def __init__(self, capability: MemoryCapability) -> None:
        self._conversations = _Conversations(capability)
        self.tools: list[ToolParam] = [
            ToolParam(**anthropic_tool(spec))  # type: ignore[typeddict-item]
            for spec in capability.specs
        ]
        """The memory tools, for ``messages.create(tools=...)``."""
        self._names = frozenset(spec.name for spec in capability.specs)

    async def system(self, session: MemorySession, first_user_text: str) -> str:
        """The Manual and recall block for the session's conversation (computed once)."""
        return await self._conversations.instructions(session, first_user_text)

    async def capture(
        self, session: MemorySession, messages: Iterable[Any], **options: Any
    ) -> CaptureResult:
        """The end-of-conversation hook: store the conversation's ``messages`` (the list
        sent to ``messages.create``, plus the last response) as episodes in the
        session's scope, once each (``options`` as for :func:`recallstore.capture.capture`)."""
        return await self._conversations.capture(session, messages, options)

    async def tool_results(
        self, session: MemorySession, content: Iterable[Any]
    ) -> list[ToolResultBlockParam]:
        """``tool_result`` blocks answering the memory ``tool_use`` blocks of ``content``.

        ``content`` is a response's content (SDK blocks or their dict form). Blocks that
        are not ``tool_use`` of a memory tool are left to the host's own tools; put the
        returned blocks in the next user message along with the host's results.
        """
        results: list[ToolResultBlockParam] = []
        for block in content:
            fields = _fields(block)
            if fields.get("type") != "tool_use" or fields.get("name") not in self._names:
                continue
            result = await self._conversations.call(
                session, str(fields["name"]), fields.get("input")
            )
            results.append(
                ToolResultBlockParam(
                    type="tool_result",
                    tool_use_id=str(fields["id"]),
                    content=_result_text(result),
                    is_error=_is_error(result),
                )
            )
        return results


def _fields(block: Any) -> Mapping[str, Any]:
    if isinstance(block, Mapping):
        return block
    return {name: getattr(block, name, None) for name in ("type", "id", "name", "input")}
