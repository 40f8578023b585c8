"""``SyncToolbox``, ``SyncMemoryCapability``, ``SyncMemoryInstance``: the toolbox and
the per-conversation recall with blocking calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import tzinfo
from typing import Any, Literal

from recallstore._background_loop import BackgroundLoop
from recallstore.capability import MemoryCapability, MemoryInstance
from recallstore.learning import DEFAULT_LEARNED_BUDGET_CHARS, Learned
from recallstore.recall import (
    DEFAULT_BUDGET_CHARS,
    DEFAULT_PROFILE_LIMIT,
    DEFAULT_RECALL_LIMIT,
    Recall,
)
from recallstore.store import Clock
from recallstore.sync._functions import tool_function
from recallstore.sync._store import SyncMemoryStore
from recallstore.toolbox import MemoryToolbox
from recallstore.tools import Tool
from recallstore.toolset import MEMORY_TOOLS, MemoryToolSpec

__all__ = ["SyncMemoryCapability", "SyncMemoryInstance", "SyncToolbox"]


class SyncToolbox:
    """A :class:`~recallstore.toolbox.MemoryToolbox` whose :meth:`call` blocks.

    Built on a :class:`SyncMemoryStore` with the toolbox's own arguments (``scope`` must
    be non-empty); the tool definitions and the Manual are the async toolbox's.
    """

    def __init__(
        self,
        store: SyncMemoryStore,
        scope: Mapping[str, str],
        *,
        tools: Iterable[MemoryToolSpec] = MEMORY_TOOLS,
        conversation_id: str | None = None,
        run_id: str | None = None,
        author: str | None = None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._loop = store.loop
        self.toolbox = MemoryToolbox(
            store.store,
            scope,
            tools=tools,
            conversation_id=conversation_id,
            run_id=run_id,
            author=author,
            time_zone=time_zone,
            clock=clock,
        )
        """The async toolbox underneath."""

    @classmethod
    def _wrapping(cls, loop: BackgroundLoop, toolbox: MemoryToolbox) -> SyncToolbox:
        wrapped = cls.__new__(cls)
        wrapped._loop = loop
        wrapped.toolbox = toolbox
        return wrapped

    @property
    def scope(self) -> dict[str, str]:
        """The scope every tool call is bound to."""
        return self.toolbox.scope

    @property
    def tools(self) -> tuple[Tool[Any, Any], ...]:
        """The offered tools, bound to this toolbox's scope, in order."""
        return self.toolbox.tools

    @property
    def manual(self) -> str:
        """The standing memory instruction naming these tools."""
        return self.toolbox.manual

    def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """Run tool ``name`` with the model's ``arguments``; a result or an error result."""
        return self._loop.run(self.toolbox.call(name, arguments))

    def functions(self) -> list[Callable[..., dict[str, Any]]]:
        """The tools as plain typed Python functions, in order, each calling :meth:`call`
        with its arguments: for frameworks that build a tool from a function's name,
        type hints and docstring (smolagents' ``tool``, ``dspy.Tool``). A parameter left
        ``None`` takes the tool's default; a model's mistake is the returned error
        result, as from :meth:`call`."""
        return [tool_function(tool, self.call) for tool in self.toolbox.tools]

    def openai_tools(self, *, api: Literal["chat", "responses"] = "chat") -> list[dict[str, Any]]:
        """The tools as OpenAI strict function tools."""
        return self.toolbox.openai_tools(api=api)

    def anthropic_tools(self) -> list[dict[str, Any]]:
        """The tools as Anthropic tool definitions."""
        return self.toolbox.anthropic_tools()

    def mcp_tools(self) -> list[dict[str, Any]]:
        """The tools as MCP tool definitions."""
        return self.toolbox.mcp_tools()


class SyncMemoryInstance:
    """One conversation's memory (:class:`~recallstore.capability.MemoryInstance`), whose
    toolbox blocks."""

    def __init__(self, loop: BackgroundLoop, instance: MemoryInstance) -> None:
        self.instance = instance
        """The async instance underneath."""
        self.toolbox = SyncToolbox._wrapping(loop, instance.toolbox)
        """The conversation's toolbox, with a blocking ``call``."""

    @property
    def scope(self) -> dict[str, str]:
        """The conversation's memory scope."""
        return self.instance.scope

    @property
    def conversation_id(self) -> str:
        """The conversation's id."""
        return self.instance.conversation_id

    @property
    def recall(self) -> Recall:
        """What was recalled for turn one."""
        return self.instance.recall

    @property
    def run_id(self) -> str | None:
        """The run this conversation's calls are attributed to."""
        return self.instance.run_id

    @property
    def learned(self) -> Learned | None:
        """The promoted records rendered into the system prompt; None with none."""
        return self.instance.learned

    @property
    def learned_block(self) -> str | None:
        """The ``<learned_instructions>`` block; None when nothing is learned."""
        return self.instance.learned_block

    @property
    def recall_block(self) -> str | None:
        """The recall block for the system prompt; None when nothing was recalled."""
        return self.instance.recall_block

    @property
    def manual(self) -> str:
        """The standing memory instruction for the system prompt."""
        return self.instance.manual

    @property
    def instructions(self) -> str:
        """The Manual followed by the recall block, ready for a prompt."""
        return self.instance.instructions


class SyncMemoryCapability:
    """:class:`~recallstore.capability.MemoryCapability` on a :class:`SyncMemoryStore`:
    the same arguments, a blocking :meth:`instantiate`."""

    def __init__(
        self,
        store: SyncMemoryStore,
        *,
        scope_fields: Sequence[str],
        tools: Iterable[MemoryToolSpec] = MEMORY_TOOLS,
        budget_chars: int = DEFAULT_BUDGET_CHARS,
        recall_limit: int = DEFAULT_RECALL_LIMIT,
        profile_limit: int = DEFAULT_PROFILE_LIMIT,
        author: str | None = None,
        learned_budget_chars: int = DEFAULT_LEARNED_BUDGET_CHARS,
    ) -> None:
        self.store = store
        """The blocking store it runs on (for :func:`recallstore.sync.capture` and the
        other blocking calls of a conversation's end)."""
        self._loop = store.loop
        self.capability = MemoryCapability(
            store.store,
            scope_fields=scope_fields,
            tools=tools,
            budget_chars=budget_chars,
            recall_limit=recall_limit,
            profile_limit=profile_limit,
            author=author,
            learned_budget_chars=learned_budget_chars,
        )
        """The async capability underneath."""

    def instantiate(
        self,
        session_scope: Mapping[str, str],
        *,
        conversation_id: str,
        first_user_text: str,
        run_id: str | None = None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
    ) -> SyncMemoryInstance:
        """The toolbox and turn-one recall for one conversation of a session;
        ``time_zone`` and ``clock`` (default: the store's) as for
        :meth:`~recallstore.capability.MemoryCapability.instantiate`."""
        instance = self._loop.run(
            self.capability.instantiate(
                session_scope,
                conversation_id=conversation_id,
                first_user_text=first_user_text,
                run_id=run_id,
                time_zone=time_zone,
                clock=clock,
            )
        )
        return SyncMemoryInstance(self._loop, instance)

    def toolbox(
        self,
        session_scope: Mapping[str, str],
        *,
        conversation_id: str | None = None,
        run_id: str | None = None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
    ) -> SyncToolbox:
        """A session's toolbox without the recall, e.g. for a later turn."""
        toolbox = self.capability.toolbox(
            session_scope,
            conversation_id=conversation_id,
            run_id=run_id,
            time_zone=time_zone,
            clock=clock,
        )
        return SyncToolbox._wrapping(self._loop, toolbox)
