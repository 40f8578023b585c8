"""LlamaIndex: a memory block for ``Memory`` and the memory tools as a tool spec.

:class:`LlamaIndexMemory` gives, for the host's :class:`MemorySession`, a
:class:`RecallstoreMemoryBlock` (a ``BaseMemoryBlock[str]``) inside LlamaIndex's own
``Memory``, and a :class:`RecallstoreToolSpec` (a ``BaseToolSpec``) whose tools an agent
(``FunctionAgent``, ``ReActAgent``) calls. The block's ``aget`` gives the Manual and the
recall block, computed once per conversation from its first user message, which
``Memory`` puts in the system message; its ``aput`` (the messages ``Memory`` flushes out
of its short-term queue) captures them as episodes. :meth:`LlamaIndexMemory.capture`
captures the whole conversation at its end, once per message.

The scope is fixed when the conversation's block and tools are made, never the model's:
a ``scope`` argument is refused like any unknown argument. A model's mistake comes back
as a ``ToolOutput`` with ``is_error=True`` holding the structured error. LlamaIndex's
agents turn every tool exception into such an output, so a store failure reaches the
model as ``unavailable`` (as over MCP), with the exception on the ``ToolOutput``.

Needs the ``llama-index`` extra.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import (
    MemorySession,
    _Conversations,
    _is_error,
    _result_text,
)
from recallstore.adapters._unavailable import UNAVAILABLE as _UNAVAILABLE
from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult
from recallstore.errors import StoreUnavailableError

with _framework_imports("llama_index", "the LlamaIndex adapter", "llama-index"):
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import BaseMemoryBlock, Memory
    from llama_index.core.tools import FunctionTool, ToolMetadata, ToolOutput
    from llama_index.core.tools.tool_spec.base import SPEC_FUNCTION_TYPE, BaseToolSpec
    from pydantic import PrivateAttr

__all__ = ["LlamaIndexMemory", "MemorySession", "RecallstoreMemoryBlock", "RecallstoreToolSpec"]


class LlamaIndexMemory:
    """Memory for LlamaIndex agents: a ``Memory`` with the recall block, and the tools."""

    def __init__(self, capability: MemoryCapability, **capture_options: Any) -> None:
        self._conversations = _Conversations(capability)
        self._options = capture_options

    def block(self, session: MemorySession) -> RecallstoreMemoryBlock:
        """The memory block of ``session``'s conversation."""
        self._conversations.toolbox(session)  # a scope missing a field fails now
        block = RecallstoreMemoryBlock()
        block._bind(self, session)
        return block

    def memory(self, session: MemorySession, **options: Any) -> Memory:
        """LlamaIndex's ``Memory`` for the conversation (its id the session id), holding
        the block; keep it for the conversation (``options`` as for ``Memory.from_defaults``)."""
        return Memory.from_defaults(
            session_id=session.conversation_id, memory_blocks=[self.block(session)], **options
        )

    @asynccontextmanager
    async def conversation(self, session: MemorySession, **options: Any) -> AsyncIterator[Memory]:
        """:meth:`memory` for the block's duration, captured (:meth:`capture`) when it
        ends without an error."""
        memory = self.memory(session, **options)
        yield memory
        await self.capture(memory)

    def tool_spec(self, session: MemorySession) -> RecallstoreToolSpec:
        """The memory tools of ``session``, as a tool spec."""
        return RecallstoreToolSpec(self, session)

    def tools(self, session: MemorySession) -> list[FunctionTool]:
        """The memory tools of ``session`` (``tool_spec(session).to_tool_list()``)."""
        return self.tool_spec(session).to_tool_list()

    async def capture(self, memory: Memory, **options: Any) -> CaptureResult:
        """The end-of-conversation hook: store every message of ``memory`` (a Memory from
        :meth:`memory`) as episodes in its session's scope, once each."""
        [block] = [b for b in memory.memory_blocks if isinstance(b, RecallstoreMemoryBlock)]
        return await block.capture(await memory.aget_all(), 0, options)

    async def _call(self, session: MemorySession, name: str, arguments: dict[str, Any]) -> Any:
        return await self._conversations.call(session, name, arguments)


class RecallstoreMemoryBlock(BaseMemoryBlock[str]):
    """A ``Memory`` block holding the Manual and the recall block; it captures what
    ``Memory`` flushes to it. Made by :meth:`LlamaIndexMemory.block`."""

    name: str = "recallstore"
    description: str | None = "Long-term memory of this user (recallstore)."
    priority: int = 0  # never truncated: the Manual explains the tools

    _owner: LlamaIndexMemory | None = PrivateAttr(default=None)
    _session: MemorySession | None = PrivateAttr(default=None)
    _flushed: int = PrivateAttr(default=0)

    def _bind(self, owner: LlamaIndexMemory, session: MemorySession) -> None:
        self._owner, self._session = owner, session

    def _bound(self) -> tuple[LlamaIndexMemory, MemorySession]:
        if self._owner is None or self._session is None:
            raise RuntimeError("make the block with LlamaIndexMemory.block(session)")
        return self._owner, self._session

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        owner, session = self._bound()
        first = next((m.content or "" for m in messages or [] if m.role.value == "user"), "")
        return await owner._conversations.instructions(session, first)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        # Memory flushes its oldest messages in order, each once: they follow the ones
        # flushed before, so their positions match those capture() gives them.
        await self.capture(messages, self._flushed, {})
        self._flushed += len(messages)

    async def capture(
        self, messages: Iterable[ChatMessage], start: int, options: dict[str, Any]
    ) -> CaptureResult:
        """Capture ``messages``, the conversation's from position ``start`` on."""
        owner, session = self._bound()
        # Text-less placeholders keep each message at its place in the conversation.
        placeholders = [("user", "")] * start
        transcript = [*placeholders, *[(_role(m), m.content or "") for m in messages]]
        return await owner._conversations.capture(
            session, transcript, {**owner._options, **options}
        )


class RecallstoreToolSpec(BaseToolSpec):
    """The memory tools of one conversation, as LlamaIndex ``FunctionTool``\\s."""

    def __init__(self, owner: LlamaIndexMemory, session: MemorySession) -> None:
        self._owner, self._session = owner, session
        specs = owner._conversations.capability.specs
        self._specs = {spec.name: spec for spec in specs}
        self.spec_functions: list[SPEC_FUNCTION_TYPE] = list(self._specs)

    def to_tool_list(
        self,
        spec_functions: list[SPEC_FUNCTION_TYPE] | None = None,
        func_to_metadata_mapping: dict[str, ToolMetadata] | None = None,
    ) -> list[FunctionTool]:
        """The tools (all, or those named in ``spec_functions``)."""
        names = [str(name) for name in spec_functions or self.spec_functions]
        return [self._tool(name) for name in names]

    def _tool(self, name: str) -> FunctionTool:
        spec = self._specs[name]
        metadata = _SchemaMetadata(
            description=spec.description, name=name, fn_schema=None, schema=spec.input_schema()
        )
        return FunctionTool.from_defaults(
            async_fn=self._dispatcher(name),
            tool_metadata=metadata,
            async_callback=_as_output,
        )

    def _dispatcher(self, name: str) -> Callable[..., Awaitable[ToolOutput]]:
        async def dispatch(**arguments: Any) -> ToolOutput:
            raw_input = {"kwargs": arguments}
            try:
                result = await self._owner._call(self._session, name, arguments)
            except StoreUnavailableError as exc:
                text = _result_text(_UNAVAILABLE)
                return ToolOutput(
                    content=text,
                    tool_name=name,
                    raw_input=raw_input,
                    raw_output=_UNAVAILABLE,
                    is_error=True,
                    exception=exc,
                )
            return ToolOutput(
                content=_result_text(result),
                tool_name=name,
                raw_input=raw_input,
                raw_output=result,
                is_error=_is_error(result),
            )

        dispatch.__name__ = name
        return dispatch


@dataclass
class _SchemaMetadata(ToolMetadata):
    """Tool metadata whose parameters are a JSON schema (the tool spec's), not a model."""

    schema: dict[str, Any] = field(default_factory=dict)

    def get_parameters_dict(self) -> dict[str, Any]:
        return self.schema


async def _as_output(output: ToolOutput) -> ToolOutput:
    """The dispatcher's ``ToolOutput`` as it is (``FunctionTool`` would wrap it again)."""
    return output


def _role(message: ChatMessage) -> str:
    role = message.role.value
    if role in ("user", "system"):
        return role
    return "assistant" if role in ("assistant", "chatbot", "model") else "tool"
