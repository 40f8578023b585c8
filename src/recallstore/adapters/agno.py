"""Agno: Agno's ``MemoryManager`` on recallstore, with the memory tools and our recall.

:class:`AgnoMemory` is an ``agno.memory.MemoryManager`` (``Agent(memory_manager=memory)``)
whose user memories are recallstore records. Agno's ``user_id`` (the host's argument to
``agent.run``, never the model's) fills the ``user_field`` of the session scope, beside
the fixed ``scope`` the host gives; Agno's ``session_id`` is the conversation id.
Agno's own code paths run on it:

* **user memories** — ``get_user_memories``, ``get_user_memory``, ``add_user_memory``,
  ``replace_user_memory`` (supersedes: the old text stays in the audit trail),
  ``delete_user_memory`` (invalidates) and ``search_user_memories`` (best first; newest
  first without a query), sync and async; memories of another user are never seen.
* **capture** — :meth:`AgnoMemory.capture` (a post-hook) keeps each run's user and
  assistant messages verbatim as ``episode`` records through
  :func:`recallstore.capture.capture`, each once; Agno's model extraction
  (``create_user_memories``) asks no model.
* **tools** — :attr:`AgnoMemory.tools`, the memory tools as Agno ``Function``s, bound to
  the run's ``user_id`` and ``session_id``; a model's mistake is a result it can act on.
* **the prompt** — :meth:`AgnoMemory.recall` (a pre-hook) computes the Manual and the
  recall block once per conversation from its first user message, and
  :meth:`AgnoMemory.instructions` (``Agent(instructions=...)``) puts them in the system
  prompt. Agno's own memory listing is turned off (``add_memories_to_context=False``):
  it would paste every memory's text unescaped.

The store runs on a :class:`~recallstore.sync.SyncMemoryStore`'s loop, because Agno calls
the sync methods even inside ``arun``. Needs the ``agno`` extra.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import MemorySession, _Conversations, _result_text
from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult
from recallstore.errors import ConfigurationError, MemoryNotFoundError, MemoryValidationError
from recallstore.records import MemoryRecord, MemorySearchQuery
from recallstore.store import scope_matches
from recallstore.sync import SyncMemoryStore

with _framework_imports("agno", "the Agno adapter", "agno"):
    from agno.db.schemas import UserMemory
    from agno.memory import MemoryManager
    from agno.models.message import Message
    from agno.run.agent import RunInput, RunOutput
    from agno.run.base import RunContext
    from agno.tools.function import Function

__all__ = ["AgnoMemory"]

T = TypeVar("T")
_TAG = "agno"
_LIST_LIMIT = 100


class AgnoMemory(MemoryManager):
    """Agno's ``MemoryManager`` on ``store`` (a :class:`SyncMemoryStore`).

    ``scope_fields`` are the memory scope's fields, one of which is ``user_field`` (what
    Agno's ``user_id`` fills); ``scope`` gives the others (e.g. ``{"tenant": "acme"}``).
    """

    def __init__(
        self,
        store: SyncMemoryStore,
        *,
        scope_fields: Iterable[str] = ("user",),
        scope: Mapping[str, str] | None = None,
        user_field: str = "user",
    ) -> None:
        super().__init__(add_memories=True, update_memories=True, delete_memories=True)
        if not isinstance(store, SyncMemoryStore):
            raise ConfigurationError(
                f"AgnoMemory needs a recallstore.sync.SyncMemoryStore (Agno calls memory "
                f"without await), got {type(store).__name__}"
            )
        fixed = dict(scope or {})
        if user_field in fixed:
            raise ConfigurationError(
                f"scope must not fix {user_field!r}: Agno's user_id fills it on every run"
            )
        self._loop = store.loop
        self._memory = _Conversations(
            MemoryCapability(store.store, scope_fields=tuple(scope_fields))
        )
        self._fixed = fixed
        self._user_field = user_field
        self._memory.capability.scope_for({**fixed, user_field: "-"})  # fields are checked here
        self.tools: list[Function] = [
            self._function(spec.name, spec.description, spec.input_schema())
            for spec in self._memory.capability.specs
        ]
        """The memory tools, for ``Agent(tools=...)``."""

    def agent_options(self) -> dict[str, Any]:
        """The ``Agent`` arguments that give it this memory (``Agent(model=model,
        **memory.agent_options())``): the manager, the tools, the recall pre-hook and
        the instructions, the capture post-hook, and Agno's own listing turned off."""
        return {
            "memory_manager": self,
            "tools": list(self.tools),
            "pre_hooks": [self.recall],
            "instructions": self.instructions,
            "post_hooks": [self.capture],
            "add_memories_to_context": False,
        }

    # -- who is talking --------------------------------------------------------------

    def session(self, user_id: str | None, session_id: str | None) -> MemorySession:
        """The host's session for Agno's ``user_id`` (required) and ``session_id``."""
        if not user_id or user_id == "default":
            raise ConfigurationError(
                "AgnoMemory needs the run's user_id: agent.run(text, user_id=..., session_id=...)"
            )
        return MemorySession({**self._fixed, self._user_field: user_id}, session_id or "agno")

    def _scope(self, user_id: str | None) -> dict[str, str]:
        return self._memory.capability.scope_for(self.session(user_id, None).scope)

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._loop.run(coroutine)

    # -- the prompt ------------------------------------------------------------------

    def recall(self, run_input: RunInput, run_context: RunContext) -> None:
        """A pre-hook (``Agent(pre_hooks=[memory.recall])``): computes the conversation's
        Manual and recall block from its first user message, once."""
        session = self.session(run_context.user_id, run_context.session_id)
        self._run(self._memory.instructions(session, run_input.input_content_string()))

    def instructions(self, run_context: RunContext) -> str:
        """The Manual and recall block (``Agent(instructions=memory.instructions)``)."""
        session = self.session(run_context.user_id, run_context.session_id)
        return self._run(self._memory.instructions(session, ""))

    # -- tools -----------------------------------------------------------------------

    def _function(self, name: str, description: str, schema: dict[str, Any]) -> Function:
        def call(run_context: RunContext, **arguments: Any) -> str:
            session = self.session(run_context.user_id, run_context.session_id)
            return _result_text(self._run(self._memory.call(session, name, arguments)))

        return Function(
            name=name,
            description=description,
            parameters=schema,
            entrypoint=call,
            skip_entrypoint_processing=True,
        )

    # -- Agno's user memories ----------------------------------------------------------

    def get_user_memories(self, user_id: str | None = None) -> list[UserMemory]:
        """The user's valid memories, newest first (at most 100)."""
        return self._run(self.aget_user_memories_on_loop(user_id))

    async def aget_user_memories(self, user_id: str | None = None) -> list[UserMemory]:
        return await self._loop.arun(self.aget_user_memories_on_loop(user_id))

    async def aget_user_memories_on_loop(self, user_id: str | None) -> list[UserMemory]:
        hits = await self._memory.capability.store.search(
            MemorySearchQuery(scope=self._scope(user_id), limit=_LIST_LIMIT)
        )
        return [_user_memory(hit.record, user_id) for hit in hits]

    def get_user_memory(self, memory_id: str, user_id: str | None = None) -> UserMemory | None:
        """One of the user's memories by id (None when missing or another user's)."""
        record = self._run(self._owned(memory_id, user_id))
        return _user_memory(record, user_id) if record is not None else None

    def add_user_memory(self, memory: UserMemory, user_id: str | None = None) -> str | None:
        """Save ``memory.memory`` as a ``fact`` in the user's scope; its id."""
        return self._run(self._save(memory, user_id, None))

    def replace_user_memory(
        self, memory_id: str, memory: UserMemory, user_id: str | None = None
    ) -> str | None:
        """Supersede the user's memory ``memory_id`` with ``memory.memory``; the new id."""
        return self._run(self._save(memory, user_id, memory_id))

    def delete_user_memory(self, memory_id: str, user_id: str | None = None) -> None:
        """Invalidate the user's memory ``memory_id`` (it stays in the audit trail)."""
        self._run(self._invalidate(memory_id, user_id))

    def search_user_memories(
        self,
        query: str | None = None,
        limit: int | None = None,
        retrieval_method: str | None = None,
        user_id: str | None = None,
    ) -> list[UserMemory]:
        """The user's valid memories matching ``query``, best first (newest first without
        one); ``retrieval_method`` is ignored: recallstore ranks, no model is asked."""
        return self._run(self._search(query, limit, user_id))

    def clear(self) -> None:
        """Refused: recallstore never deletes a scope's memories wholesale."""
        raise ConfigurationError("AgnoMemory does not clear memories: invalidate them one by one")

    def create_user_memories(
        self,
        message: str | None = None,
        messages: list[Message] | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        user_id: str | None = None,
        run_metrics: Any = None,
    ) -> str:
        """Agno's model extraction, not run: no model is asked to rewrite what was said
        (the ``capture`` post-hook keeps the run verbatim; the model saves with its tools)."""
        return "recallstore keeps the conversation through the capture post-hook"

    async def acreate_user_memories(
        self,
        message: str | None = None,
        messages: list[Message] | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        user_id: str | None = None,
        run_metrics: Any = None,
    ) -> str:
        return self.create_user_memories(message, messages, agent_id, team_id, user_id)

    def capture(self, run_output: RunOutput, run_context: RunContext) -> CaptureResult:
        """A post-hook (``Agent(post_hooks=[memory.capture])``): the run's user and
        assistant messages, verbatim as ``episode`` records, each once (re-running it
        for the same run adds nothing). The conversation id is the session's and the
        run's, ``<session_id>/<run_id>``."""
        session = self.session(run_context.user_id, run_context.session_id)
        conversation = MemorySession(
            session.scope, f"{session.conversation_id}/{run_output.run_id}"
        )
        transcript = [
            {"role": m.role, "content": m.get_content_string()}
            for m in run_output.messages or ()
            if m.role in ("user", "assistant") and not m.from_history
        ]
        return self._run(self._memory.capture(conversation, transcript, {"tags": (_TAG,)}))

    # -- on the store's loop -----------------------------------------------------------

    async def _owned(self, memory_id: str, user_id: str | None) -> MemoryRecord | None:
        record = await self._memory.capability.store.get(memory_id)
        if record is None or not scope_matches(record.scope, self._scope(user_id)):
            return None
        return record

    async def _save(self, memory: UserMemory, user_id: str | None, replaces: str | None) -> str:
        arguments: dict[str, Any] = {"content": memory.memory, "tags": list(memory.topics or ())}
        if replaces is not None:
            if await self._owned(replaces, user_id) is None:
                raise MemoryNotFoundError(replaces)
            arguments["supersedes"] = replaces
        result = await self._memory.call(self.session(user_id, None), "memory_save", arguments)
        if result.get("ok") is not True:
            error = result.get("error") or {}
            raise MemoryValidationError(
                "memory", str(error.get("message", error)).removeprefix("content: "), memory.memory
            )
        return str(result["memory"]["id"])

    async def _invalidate(self, memory_id: str, user_id: str | None) -> None:
        if await self._owned(memory_id, user_id) is None:
            raise MemoryNotFoundError(memory_id)
        await self._memory.capability.store.invalidate(memory_id, "deleted through Agno")

    async def _search(
        self, query: str | None, limit: int | None, user_id: str | None
    ) -> list[UserMemory]:
        hits = await self._memory.capability.store.search(
            MemorySearchQuery(
                query=query if query and query.strip() else None,
                scope=self._scope(user_id),
                limit=max(1, min(limit or _LIST_LIMIT, _LIST_LIMIT)),
            )
        )
        return [_user_memory(hit.record, user_id) for hit in hits]


def _user_memory(record: MemoryRecord, user_id: str | None) -> UserMemory:
    return UserMemory(
        memory=record.content,
        memory_id=record.id,
        topics=list(record.tags),
        user_id=user_id,
        created_at=int(record.created_at.timestamp()),
    )
