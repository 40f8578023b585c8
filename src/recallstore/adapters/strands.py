"""Strands Agents: a ``MemoryStore`` under Strands' own ``MemoryManager``.

:meth:`StrandsMemory.manager` gives the ``MemoryManager`` for one conversation
(``Agent(memory_manager=memory.manager(session))``), holding a
:class:`RecallstoreMemoryStore` bound to that conversation's :class:`MemorySession`:
the scope is fixed when the agent is built, and no tool takes one. Strands' own code
paths then run on recallstore:

* **tools** — the store's ``get_tools()``: the capability's memory tools. A model's
  mistake (bad arguments, an unknown id, a ``scope`` argument) comes back as a tool
  result with ``status: "error"`` holding the structured error, never an exception.
* **the prompt** — an ``InvokeModelStage.Input`` middleware appends the Manual and the
  recall block to the system prompt, computed once per conversation from its first user
  message (byte-identical on every call). Strands' own injection (memory folded into
  the user message on each turn) and its ``search_memory`` / ``add_memory`` tools are
  off by default and go through :meth:`RecallstoreMemoryStore.search` and
  :meth:`RecallstoreMemoryStore.add` when turned on.
* **capture** — the store's extraction hands each run's messages to ``add_messages``
  (Strands' server-side extraction, no model call) after every invocation; they are kept
  verbatim as ``episode`` records through :func:`recallstore.capture.capture`, each
  named by its ``AddMessagesContext.sequence_numbers`` entry, so a retried or repeated
  batch adds nothing. ``agent(...)`` flushes after each call; after
  ``await agent.invoke_async(...)`` await ``agent.memory_manager.flush()`` (or
  ``agent.shutdown_async()``).

The synchronous ``agent(text)`` runs on an event loop of its own: give
``StrandsMemory(loop=...)`` the loop of a :class:`~recallstore.sync.SyncMemoryStore`
the capability's store runs on. Needs the ``strands`` extra.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import (
    MemorySession,
    _Conversations,
    _is_error,
    _result_text,
)
from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult
from recallstore.errors import ConfigurationError, MemoryValidationError
from recallstore.records import MAX_LIMIT, MemoryRecord, MemorySearchQuery
from recallstore.sync import BackgroundLoop

with _framework_imports("strands", "the Strands Agents adapter", "strands"):
    from strands.memory import (
        AddMessagesContext,
        ExtractionConfig,
        InvocationTrigger,
        MemoryEntry,
        MemoryManager,
        MemoryStore,
        SearchOptions,
    )
    from strands.middleware import InvokeModelContext, InvokeModelStage
    from strands.types.content import Message, Messages
    from strands.types.events import ToolResultEvent
    from strands.types.tools import AgentTool, ToolGenerator, ToolResult, ToolSpec, ToolUse

__all__ = ["MemorySession", "RecallstoreMemoryStore", "StrandsMemory"]

_TAG = "strands"
_DEFAULT_SEARCH_LIMIT = 10

T = TypeVar("T")
_Portal = Callable[[Coroutine[Any, Any, T]], Awaitable[T]]
"""Runs a store coroutine where the store lives (its BackgroundLoop), from any loop."""


async def _here(coroutine: Coroutine[Any, Any, T]) -> T:
    return await coroutine


class StrandsMemory:
    """recallstore memory for Strands agents: one :meth:`manager` per conversation.

    For the synchronous ``agent(text)``, which runs each call on an event loop of its
    own, build the capability on a :class:`~recallstore.sync.SyncMemoryStore`'s store
    and pass its ``loop``: every store call is then run there.
    """

    def __init__(
        self,
        capability: MemoryCapability,
        *,
        name: str = "recallstore",
        loop: BackgroundLoop | None = None,
    ) -> None:
        self._conversations = _Conversations(capability)
        self._portal: _Portal[Any] = loop.arun if loop is not None else _here
        self.name = name
        """The store's name in Strands (its tools' ``stores`` argument names it)."""

    def store(self, session: MemorySession, *, extraction: bool = True) -> RecallstoreMemoryStore:
        """The Strands ``MemoryStore`` of ``session``'s conversation."""
        return RecallstoreMemoryStore(
            self._conversations, session, self.name, extraction, self._portal
        )

    def manager(
        self,
        session: MemorySession,
        *,
        extraction: bool = True,
        search_tool: bool = False,
        add_tool: bool = False,
        injection: bool = False,
    ) -> MemoryManager:
        """Strands' ``MemoryManager`` for ``session``'s conversation, for
        ``Agent(memory_manager=...)``: the memory tools, the Manual and recall block in
        the system prompt, and (``extraction``) the conversation captured after each
        run. ``search_tool``, ``add_tool`` and ``injection`` turn on Strands' own
        ``search_memory`` and ``add_memory`` tools and per-turn injection."""
        if not isinstance(session, MemorySession):
            raise ConfigurationError(
                f"StrandsMemory.manager needs a recallstore MemorySession, "
                f"got {type(session).__name__}: {session!r}"
            )
        self._conversations.toolbox(session)  # a session missing a scope field fails here
        return _Manager(
            self._conversations,
            session,
            self._portal,
            stores=[self.store(session, extraction=extraction)],
            search_tool_config=search_tool,
            add_tool_config=add_tool,
            injection=injection,
        )

    async def instructions(self, session: MemorySession, first_user_text: str) -> str:
        """The Manual and recall block for the session's conversation (computed once)."""
        text: str = await self._portal(self._conversations.instructions(session, first_user_text))
        return text


class RecallstoreMemoryStore(MemoryStore):
    """A Strands ``MemoryStore`` on recallstore, bound to one conversation's session.

    ``search`` returns the scope's valid memories, best first (newest first for a blank
    query); ``add`` saves a ``fact`` through the memory tools (validated, provenance
    stamped); ``add_messages`` captures messages verbatim; ``get_tools`` gives the
    memory tools. Nothing here ever reaches another scope.
    """

    def __init__(
        self,
        conversations: _Conversations,
        session: MemorySession,
        name: str,
        extraction: bool,
        portal: _Portal[Any] = _here,
    ) -> None:
        self._conversations = conversations
        self._portal = portal
        self.session = session
        """The conversation this store serves."""
        self.name = name
        self.description: str | None = "Long-term memory of this user, from earlier conversations."
        self.max_search_results: int | None = _DEFAULT_SEARCH_LIMIT
        self.writable = True
        self.extraction: ExtractionConfig | bool | None = (
            ExtractionConfig(trigger=InvocationTrigger()) if extraction else None
        )
        self._tools: list[AgentTool] = [
            _MemoryTool(
                conversations, session, spec.name, spec.description, spec.input_schema(), portal
            )
            for spec in conversations.capability.specs
        ]

    async def search(self, query: str, options: SearchOptions | None = None) -> list[MemoryEntry]:
        """The session's valid memories matching ``query``, best first."""
        limit = (options or {}).get("max_search_results") or self.max_search_results
        capability = self._conversations.capability
        hits = await self._portal(
            capability.store.search(
                MemorySearchQuery(
                    query=query if query.strip() else None,
                    scope=capability.scope_for(self.session.scope),
                    limit=max(1, min(int(limit or _DEFAULT_SEARCH_LIMIT), MAX_LIMIT)),
                )
            )
        )
        return [_entry(hit.record) for hit in hits]

    async def add(self, content: str, metadata: dict[str, Any] | None = None) -> str:
        """Save ``content`` as a ``fact`` in the session's scope; its id. Invalid content
        raises :class:`MemoryValidationError` (Strands' ``add_memory`` tool returns it to
        the model as an error result)."""
        result = await self._portal(
            self._conversations.call(
                self.session, "memory_save", {"content": content, "tags": [_TAG]}
            )
        )
        if _is_error(result):
            error = result["error"]
            raise MemoryValidationError(
                "content", str(error.get("message", error)).removeprefix("content: "), content
            )
        return str(result["memory"]["id"])

    async def add_messages(
        self, messages: list[Message], context: AddMessagesContext | None = None
    ) -> CaptureResult:
        """Capture ``messages`` verbatim as ``episode`` records (each once per conversation)."""
        numbers = context.sequence_numbers if context is not None else None
        return await self.capture(messages, numbers)

    async def capture(
        self, messages: Sequence[Message], numbers: Sequence[int] | None = None, **options: Any
    ) -> CaptureResult:
        """Capture ``messages`` (``agent.messages``, or a batch whose ``numbers`` say which
        message of the conversation each is) in the session's scope, each message once;
        ``options`` as for :func:`recallstore.capture.capture`."""
        if numbers is None:
            numbers = range(len(messages))
        if len(numbers) != len(messages) or len(set(numbers)) != len(numbers):
            raise ConfigurationError(
                f"add_messages needs one distinct sequence number per message: "
                f"{len(messages)} messages, numbers {list(numbers)!r}"
            )
        # The transcript index names a message in its idempotency key: each message sits
        # at its sequence number, the positions between stay empty.
        transcript: list[Any] = [("user", "")] * (max(numbers, default=-1) + 1)
        for number, message in zip(numbers, messages, strict=True):
            transcript[number] = _as_chat(message)
        tags = (_TAG, *options.pop("tags", ()))
        options = {**options, "tags": tags}
        captured: CaptureResult = await self._portal(
            self._conversations.capture(self.session, transcript, options)
        )
        return captured

    def get_tools(self) -> list[AgentTool]:
        """The memory tools, bound to the session's scope."""
        return list(self._tools)


class _Manager(MemoryManager):
    """Strands' MemoryManager, which also puts the Manual and recall in the system prompt."""

    def __init__(
        self,
        conversations: _Conversations,
        session: MemorySession,
        portal: _Portal[Any],
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._memory = conversations
        self._session = session
        self._portal = portal

    async def init_agent(self, agent: Any) -> None:
        await super().init_agent(agent)
        agent.add_middleware(InvokeModelStage.Input, self._with_memory)

    async def _with_memory(self, context: InvokeModelContext) -> InvokeModelContext:
        first = _first_user_text(context.messages)
        text: str = await self._portal(self._memory.instructions(self._session, first))
        prompt = context.system_prompt
        if prompt is None or prompt == "":
            return context.replace(system_prompt=text)
        if isinstance(prompt, str):
            return context.replace(system_prompt=f"{prompt}\n\n{text}")
        return context.replace(system_prompt=[*prompt, {"text": text}])


class _MemoryTool(AgentTool):
    """One memory tool; the scope is the session's, never the model's."""

    def __init__(
        self,
        conversations: _Conversations,
        session: MemorySession,
        name: str,
        description: str,
        schema: dict[str, Any],
        portal: _Portal[Any],
    ) -> None:
        super().__init__()
        self._conversations = conversations
        self._session = session
        self._portal = portal
        self._spec = ToolSpec(name=name, description=description, inputSchema={"json": schema})

    @property
    def tool_name(self) -> str:
        return self._spec["name"]

    @property
    def tool_spec(self) -> ToolSpec:
        return self._spec

    @property
    def tool_type(self) -> str:
        return "python"

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> ToolGenerator:
        call = self._conversations.call(self._session, self.tool_name, tool_use["input"])
        result = await self._portal(call)
        yield ToolResultEvent(
            ToolResult(
                toolUseId=tool_use["toolUseId"],
                status="error" if _is_error(result) else "success",
                content=[{"text": _result_text(result)}],
            )
        )


def _entry(record: MemoryRecord) -> MemoryEntry:
    return MemoryEntry(
        content=record.content,
        metadata={
            "id": record.id,
            "kind": record.kind,
            "tags": list(record.tags),
            "created_at": record.created_at.isoformat(),
        },
    )


def _first_user_text(messages: Messages) -> str:
    for message in messages:
        if message["role"] == "user":
            text = _text(message["content"])
            if text:
                return text
    return ""


def _text(blocks: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(str(block["text"]) for block in blocks if "text" in block).strip()


def _as_chat(message: Message) -> dict[str, Any]:
    """A Strands message as the chat shape capture reads: text, tool uses and results."""
    blocks: list[dict[str, Any]] = []
    for block in message["content"]:
        if "text" in block:
            blocks.append({"type": "text", "text": block["text"]})
        elif "toolUse" in block:
            use = block["toolUse"]
            blocks.append({"type": "tool_use", "name": use["name"], "input": use["input"]})
        elif "toolResult" in block:
            inner = [
                {"type": "text", "text": part["text"]}
                for part in block["toolResult"]["content"]
                if "text" in part
            ]
            blocks.append({"type": "tool_result", "content": inner})
    return {"role": message["role"], "content": blocks}
