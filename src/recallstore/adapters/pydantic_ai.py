"""pydantic-ai: the memory tools as a toolset that also brings the Manual and the recall.

:class:`MemoryToolset` is a ``FunctionToolset`` holding the capability's memory tools.
The scope comes from the run's deps (a :class:`MemorySession`, or whatever ``session``
maps your deps to), never from the model: a ``scope`` argument is refused like any
unknown argument. The toolset's instructions are the Manual and the recall block,
computed once per conversation from its first user message. A model's mistake (bad
arguments, an unknown id) comes back as a normal tool result it can act on, never as a
retry, so it cannot exhaust pydantic-ai's retry budget and abort the user's run.

Needs the ``pydantic-ai`` extra::

    agent = Agent(model, deps_type=MemorySession, toolsets=[MemoryToolset(capability)])
    await agent.run("I moved to Lisbon.", deps=MemorySession({"user": "u_42"}, "conv-1"))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import MemorySession, _as_session, _Conversations
from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult

with _framework_imports("pydantic_ai", "the pydantic-ai adapter", "pydantic-ai"):
    from pydantic_ai import FunctionToolset, InstructionPart, RunContext, Tool
    from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart

__all__ = ["MemorySession", "MemoryToolset"]

SessionOf = Callable[[Any], MemorySession]
"""Maps a run's deps to the host's :class:`MemorySession`."""


def _deps_session(deps: Any) -> MemorySession:
    return _as_session(deps, "the run's deps")


class MemoryToolset(FunctionToolset[Any]):
    """The memory tools of ``capability`` for ``Agent(toolsets=[...])``.

    ``session`` maps the run's deps to a :class:`MemorySession` (default: the deps are
    one). With ``add_instructions=True`` (the default) the toolset adds the Manual and the
    recall block to the agent's instructions; pass ``False`` and use
    :meth:`memory_instructions` as ``Agent(instructions=...)`` to place them yourself.
    """

    def __init__(
        self,
        capability: MemoryCapability,
        *,
        session: SessionOf = _deps_session,
        add_instructions: bool = True,
        id: str = "recallstore_memory",
    ) -> None:
        self._conversations = _Conversations(capability)
        self._session = session
        self._adds_instructions = add_instructions
        super().__init__(
            [
                Tool.from_schema(
                    self._dispatcher(spec.name),
                    name=spec.name,
                    description=spec.description,
                    json_schema=spec.input_schema(),
                    takes_ctx=True,
                )
                for spec in capability.specs
            ],
            id=id,
        )

    def _dispatcher(self, name: str) -> Callable[..., Awaitable[dict[str, Any]]]:
        # from_schema skips pydantic-ai's validation: the toolbox validates, and its
        # structured errors reach the model as results instead of retries.
        # ctx is positional-only, so a model's `ctx` argument is refused like any unknown one.
        async def dispatch(ctx: RunContext[Any], /, **arguments: Any) -> dict[str, Any]:
            return await self._conversations.call(self._session(ctx.deps), name, arguments)

        dispatch.__name__ = name
        return dispatch

    async def memory_instructions(self, ctx: RunContext[Any]) -> str:
        """The Manual and the recall block for the run's conversation (computed once)."""
        return await self._conversations.instructions(
            self._session(ctx.deps), _first_user_text(ctx)
        )

    async def capture(
        self, deps: Any, messages: Sequence[ModelMessage], **options: Any
    ) -> CaptureResult:
        """The end-of-conversation hook: store the conversation's messages (a run's
        ``result.all_messages()``) as episodes in the session's scope, once each
        (``options`` as for :func:`recallstore.capture.capture`)."""
        return await self._conversations.capture(self._session(deps), messages, options)

    async def get_instructions(self, ctx: RunContext[Any]) -> list[InstructionPart] | None:
        """The toolset's instructions, then (unless turned off) :meth:`memory_instructions`."""
        parts = list(await super().get_instructions(ctx) or ())
        if self._adds_instructions:
            # Static: the text is fixed for the whole conversation, so it may sit in the
            # cached prefix of the prompt.
            parts.append(InstructionPart(await self.memory_instructions(ctx), dynamic=False))
        return parts or None


def _first_user_text(ctx: RunContext[Any]) -> str:
    """The conversation's first user message: from the history, else this run's prompt."""
    for message in ctx.messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    return _text_of(part.content)
    return _text_of(ctx.prompt)


def _text_of(content: str | Sequence[Any] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(item for item in content if isinstance(item, str))
