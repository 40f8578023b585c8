"""``MemoryToolbox``: memory tools bound to one conversation's scope.

The toolbox binds tool specs (by default :data:`~recallstore.toolset.MEMORY_TOOLS`) to a
:class:`~recallstore.scoped_memory.ScopedMemory`. The scope is captured when the toolbox
is built and no tool takes one: every write is stamped with it, every read is filtered
by it, and an id outside it is answered exactly like an id that does not exist. The
exports and the Manual follow the toolbox's own tool list. There is no delete tool by
default; forgetting is the host's call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, tzinfo
from typing import Any, Literal

from recallstore.errors import EmbedderFailedError
from recallstore.scoped_memory import ScopedMemory
from recallstore.store import Clock, MemoryStore
from recallstore.tools import Tool, anthropic_tool, error_result, mcp_tool, openai_tool

# The caps and MemoryView live in toolset; they are re-exported here, where they were
# first published.
from recallstore.toolset import (
    DEFAULT_TOOL_LIMIT,
    MAX_TOOL_CONTENT_CHARS,
    MAX_TOOL_LIMIT,
    MAX_TOOL_QUERY_CHARS,
    MAX_TOOL_TAGS,
    MEMORY_TOOLS,
    MemoryToolSpec,
    MemoryView,
    check_toolset,
)

__all__ = [
    "DEFAULT_TOOL_LIMIT",
    "MAX_TOOL_CONTENT_CHARS",
    "MAX_TOOL_LIMIT",
    "MAX_TOOL_QUERY_CHARS",
    "MAX_TOOL_TAGS",
    "MemoryToolbox",
    "MemoryView",
]


class MemoryToolbox:
    """The memory tools for one conversation, bound to ``scope`` and stamped with provenance.

    ``tools`` are the specs to offer, in order (default
    :data:`~recallstore.toolset.MEMORY_TOOLS`): pass a longer or shorter sequence to add
    or remove tools. ``scope`` must be non-empty: an unscoped toolbox would let a model
    read every user's memories. A bad scope or toolset raises
    :class:`~recallstore.errors.ConfigurationError`; store failures
    (``StoreUnavailableError``) raise to the host. ``time_zone`` (an IANA name or a
    ``tzinfo``) is the user's: ``since="yesterday"`` means the user's yesterday, read
    against ``clock``: the conversation's "now" (default: the store's own clock,
    :func:`~recallstore.store.store_clock`, which is the wall clock unless the store was
    given one). ``handles`` are the recall block's short names for this conversation
    (``m1`` → record id, :attr:`~recallstore.recall.Recall.handles`): a tool taking an id
    accepts either.
    """

    def __init__(
        self,
        store: MemoryStore,
        scope: Mapping[str, str],
        *,
        tools: Iterable[MemoryToolSpec] = MEMORY_TOOLS,
        conversation_id: str | None = None,
        run_id: str | None = None,
        author: str | None = None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
        handles: Mapping[str, str] | None = None,
    ) -> None:
        self._memory = ScopedMemory(
            store,
            scope,
            conversation_id=conversation_id,
            run_id=run_id,
            author=author,
            time_zone=time_zone,
            clock=clock,
            handles=handles,
        )
        self.provenance = self._memory.provenance
        self.specs: tuple[MemoryToolSpec, ...] = check_toolset(tools)
        """The unbound specs of the offered tools, in order."""
        self.tools: tuple[Tool[Any, Any], ...] = tuple(
            spec.bind(self._memory) for spec in self.specs
        )
        """The offered tools, bound to this toolbox's scope, in order."""
        self._by_name = {tool.name: tool for tool in self.tools}

    @property
    def scope(self) -> dict[str, str]:
        """The scope every tool call is bound to (a copy: it cannot be changed)."""
        return self._memory.scope

    @property
    def time_zone(self) -> tzinfo | None:
        """The user's time zone that time phrases are read in (None: UTC)."""
        return self._memory.time_zone

    def now(self) -> datetime:
        """The conversation's clock, which time phrases are read against."""
        return self._memory.now()

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """Run tool ``name`` with the model's ``arguments``; a JSON-ready result or error result.

        Every adapter dispatches through here. The model's mistakes come back as
        ``{"ok": False, "error": {...}}``; store failures raise.
        """
        # A name that is not a string (a list, from a malformed request) is unknown too.
        tool = self._by_name.get(name) if isinstance(name, str) else None
        if tool is None:
            return error_result(
                "unknown_tool",
                f"There is no tool named {_shown(name)}; the memory tools are: "
                + ", ".join(self._by_name),
            )
        try:
            return await tool.invoke(arguments)
        except EmbedderFailedError as exc:
            # The embedding model failed (a provider outage, say): a state the model can
            # act on (go on without memory, try later), and nothing was written.
            return error_result(
                "memory_unavailable",
                f"Memory could not process this call just now (its embedding model "
                f"{exc.embedder!r} failed); nothing was saved or searched. Go on without "
                "memory for now, or try again later.",
            )

    def openai_tools(self, *, api: Literal["chat", "responses"] = "chat") -> list[dict[str, Any]]:
        """The tools as OpenAI strict function tools, in order."""
        return [openai_tool(tool, api=api) for tool in self.tools]

    def anthropic_tools(self) -> list[dict[str, Any]]:
        """The tools as Anthropic tool definitions, in order."""
        return [anthropic_tool(tool) for tool in self.tools]

    def mcp_tools(self) -> list[dict[str, Any]]:
        """The tools as MCP tool definitions, in order."""
        return [mcp_tool(tool) for tool in self.tools]

    @property
    def manual(self) -> str:
        """The standing instruction telling the model it has memory and how to curate it.

        It names this toolbox's tools and carries their Manual lines.
        """
        from recallstore.prompt import Manual

        return Manual.render(self.specs)


def _shown(name: object) -> str:
    """``name`` for an error message: its repr, cut short."""
    text = repr(name)
    return text if len(text) <= 80 else f"{text[:77]}..."
