"""Microsoft Agent Framework: a ``ContextProvider`` that recalls, gives the tools and captures.

:class:`RecallstoreContextProvider` is an Agent Framework context provider
(``Agent(context_providers=[...])``), the slot the framework's own mem0 provider fills.
Before each run (``before_run``) it adds the Manual and the recall block to the run's
instructions (the system prompt), computed once per conversation from its first user
message, and the memory tools as the framework's ``FunctionTool``\\s. After each run
(``after_run``) it captures the conversation so far (the history the agent's history
provider loaded, the run's input and its response) as episodes, once each.

The scope is the host's: :meth:`RecallstoreContextProvider.session` opens an
``AgentSession`` bound to a scope, kept in the session's state, where no model can
reach it (or pass ``session=`` a function mapping your own ``AgentSession`` to a
:class:`MemorySession`). The session's id is the conversation id. A model's mistake (a
``scope`` argument, an unknown id, a wrong type) is a function result holding
``{"ok": false, ...}`` the model can act on: it is answered before the framework's own
argument parsing, so it never counts as a failed call; a store failure fails the run.

Needs the ``agent-framework`` extra.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import MemorySession, _Conversations, _result_text
from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult
from recallstore.errors import ConfigurationError, StoreUnavailableError

with _framework_imports("agent_framework", "the Agent Framework adapter", "agent-framework"):
    from agent_framework import (
        AgentSession,
        ContextProvider,
        FunctionInvocationContext,
        FunctionMiddleware,
        FunctionTool,
        HistoryProvider,
        Message,
        MiddlewareFailure,
        SessionContext,
        SupportsAgentRun,
    )

__all__ = ["MemorySession", "RecallstoreContextProvider"]

SCOPE_KEY = "scope"
"""Where :meth:`RecallstoreContextProvider.session` keeps the scope in the provider's state."""

SessionOf = Callable[[AgentSession], MemorySession]
"""Maps the run's ``AgentSession`` to the host's :class:`MemorySession`."""


class RecallstoreContextProvider(ContextProvider):
    """Memory for an Agent Framework ``Agent``: recall, tools and capture in one provider.

    ``session`` maps the run's ``AgentSession`` to a :class:`MemorySession` (default:
    the scope :meth:`session` stored in the provider's state, and the session id as the
    conversation id). ``capture`` (default on) stores the conversation after each run;
    ``options`` are passed to :func:`recallstore.capture.capture`.
    """

    def __init__(
        self,
        capability: MemoryCapability,
        *,
        source_id: str = "recallstore",
        session: SessionOf | None = None,
        capture: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(source_id)
        self._conversations = _Conversations(capability)
        self._session: SessionOf = session or self._stored_session
        self._captures = capture
        self._options = options
        self.tools: list[FunctionTool] = [
            FunctionTool(
                name=spec.name,
                description=spec.description,
                input_model=spec.input_schema(),
                func=self._dispatcher(spec.name),
            )
            for spec in capability.specs
        ]
        """The memory tools; :meth:`before_run` adds them to every run."""
        self._middleware = _MemoryCalls(self)

    def session(self, scope: Mapping[str, str], conversation_id: str | None = None) -> AgentSession:
        """A new ``AgentSession`` bound to ``scope`` (its id the conversation id)."""
        bound = AgentSession(session_id=conversation_id)
        checked = MemorySession(dict(scope), bound.session_id)
        self._conversations.capability.scope_for(checked.scope)  # a missing field fails now
        bound.state[self.source_id] = {SCOPE_KEY: dict(checked.scope)}
        return bound

    def _stored_session(self, session: AgentSession) -> MemorySession:
        state = session.state.get(self.source_id)
        scope = state.get(SCOPE_KEY) if isinstance(state, Mapping) else None
        if not isinstance(scope, Mapping):
            raise ConfigurationError(
                "the run's AgentSession has no recallstore scope: open it with "
                "provider.session(scope, conversation_id), or pass session=... to map your own"
            )
        return MemorySession(dict(scope), session.session_id)

    def _dispatcher(self, name: str) -> Callable[..., Awaitable[str]]:
        # Reached only when the tool runs without the provider's middleware (the tools
        # put on an agent by hand): the framework has parsed the arguments already.
        async def dispatch(ctx: FunctionInvocationContext, **arguments: Any) -> str:
            return await self._call(ctx, name, arguments)

        dispatch.__name__ = name
        return dispatch

    async def _call(
        self, ctx: FunctionInvocationContext, name: str, arguments: Mapping[str, Any] | None
    ) -> str:
        if ctx.session is None:
            raise MiddlewareFailure("recallstore's memory tools need the run's AgentSession")
        try:
            result = await self._conversations.call(self._session(ctx.session), name, arguments)
        except (StoreUnavailableError, ConfigurationError) as exc:
            # The host's problem, not the model's: end the run (fail closed).
            raise MiddlewareFailure(str(exc)) from exc
        return _result_text(result)

    async def before_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Add the Manual and recall block to the instructions, and the memory tools."""
        memory_session = self._session(session)
        first = _first_user_text([*_history(agent, context), *context.input_messages])
        instructions = await self._conversations.instructions(memory_session, first)
        context.extend_instructions(self.source_id, instructions)
        context.extend_tools(self.source_id, self.tools)
        context.extend_middleware(self.source_id, [self._middleware])

    async def after_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Capture the conversation so far (history, input, response), once per message."""
        if not self._captures:
            return
        response = list(context.response.messages) if context.response else []
        await self.capture(session, [*_history(agent, context), *context.input_messages, *response])

    async def capture(
        self, session: AgentSession, messages: Iterable[Message], **options: Any
    ) -> CaptureResult:
        """Store ``messages`` (the whole conversation, in order) as episodes in the
        session's scope, once each (``options`` as for :func:`recallstore.capture.capture`)."""
        # A message without text (a tool call or result) keeps its place and stores nothing.
        transcript = [(_ROLES.get(str(m.role), "tool"), m.text) for m in messages]
        return await self._conversations.capture(
            self._session(session), transcript, {**self._options, **options}
        )


class _MemoryCalls(FunctionMiddleware):
    """Answers the memory tools' calls before the framework parses their arguments."""

    def __init__(self, provider: RecallstoreContextProvider) -> None:
        self._provider = provider
        self._tools = {id(tool): tool.name for tool in provider.tools}

    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        name = self._tools.get(id(context.function))
        if name is None:
            await call_next()
            return
        arguments = context.arguments
        raw = arguments.model_dump() if hasattr(arguments, "model_dump") else arguments
        context.result = await self._provider._call(context, name, raw)


_ROLES = {"user": "user", "assistant": "assistant", "system": "system"}


def _history(agent: SupportsAgentRun, context: SessionContext) -> list[Message]:
    """The messages the agent's history providers loaded for this run."""
    providers = getattr(agent, "context_providers", None) or []
    sources = {p.source_id for p in providers if isinstance(p, HistoryProvider)}
    return context.get_messages(sources=sources) if sources else []


def _first_user_text(messages: Iterable[Message]) -> str:
    for message in messages:
        if str(message.role) == "user" and message.text:
            return message.text
    return ""
