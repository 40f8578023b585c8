"""Google ADK: a ``BaseMemoryService`` on any MemoryStore, the memory tools and our preload.

:class:`RecallstoreMemoryService` is ADK's memory service backed by a
:class:`~recallstore.capability.MemoryCapability`: ADK's ``app_name`` and ``user_id``
are the session scope (``{"app": ..., "user": ...}`` by default), from which the
capability's ``scope_fields`` pick the memory scope. It also gives an agent its tools
(:attr:`RecallstoreMemoryService.tools`): the memory tools, whose scope comes from the
ADK session running them, never from the model; and a preload tool that puts the
Manual and *our* escaped recall block into the system instruction, computed once per
session (ADK's own ``preload_memory`` pastes memory text unescaped into the prompt).

``add_session_to_memory`` (ADK's end-of-session hook) goes through
:func:`recallstore.capture.capture`: each user and agent event with text becomes an
``episode`` record (its text as it is, tagged ``adk``), keyed by the session id and the
event id, so re-adding a session (or adding its events in pieces) stores each event once.

Needs the ``adk`` extra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import MemorySession, _Conversations
from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult, capture
from recallstore.errors import ConfigurationError, MemoryNotFoundError
from recallstore.records import (
    MAX_LIMIT,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    Provenance,
)
from recallstore.store import scope_matches

with _framework_imports("google", "the Google ADK adapter", "adk"):
    from google.adk.events.event import Event
    from google.adk.memory import BaseMemoryService
    from google.adk.memory.base_memory_service import SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.adk.models.llm_request import LlmRequest
    from google.adk.sessions.session import Session
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types

__all__ = ["RecallstoreMemoryService"]

_EVENT_TAG = "adk"
_NO_SESSION = "adk-events"
"""The conversation id of events added without a session id."""
_DEFAULT_SEARCH_LIMIT = 10


class RecallstoreMemoryService(BaseMemoryService):
    """ADK's memory service on a recallstore capability, and the tools for ``LlmAgent``.

    ``app_field`` and ``user_field`` name the session-scope fields ADK's ``app_name``
    and ``user_id`` fill; the capability's ``scope_fields`` must be among them.
    """

    def __init__(
        self,
        capability: MemoryCapability,
        *,
        app_field: str = "app",
        user_field: str = "user",
        search_limit: int = _DEFAULT_SEARCH_LIMIT,
    ) -> None:
        self._conversations = _Conversations(capability)
        if app_field == user_field:
            raise ConfigurationError(
                f"app_field and user_field must differ, both are {app_field!r}"
            )
        if not 1 <= search_limit <= MAX_LIMIT:
            raise ConfigurationError(
                f"search_limit must be between 1 and {MAX_LIMIT}, got {search_limit!r}"
            )
        unknown = sorted(set(capability.scope_fields) - {app_field, user_field})
        if unknown:
            raise ConfigurationError(
                f"ADK gives only app_name and user_id (as {app_field!r} and {user_field!r}); "
                f"the capability also needs scope field(s) {unknown!r}"
            )
        self.capability = capability
        self._fields = (app_field, user_field)
        self._search_limit = search_limit
        self.tools: list[BaseTool] = [
            _PreloadMemoryTool(self),
            *(
                _MemoryTool(self, spec.name, spec.description, spec.input_schema())
                for spec in capability.specs
            ),
        ]
        """The preload tool and the memory tools, for ``LlmAgent(tools=...)``."""

    def scope(self, app_name: str, user_id: str) -> dict[str, str]:
        """The memory scope of ADK's ``app_name`` and ``user_id``."""
        app_field, user_field = self._fields
        return self.capability.scope_for({app_field: app_name, user_field: user_id})

    def _session(self, session: Session) -> MemorySession:
        app_field, user_field = self._fields
        return MemorySession({app_field: session.app_name, user_field: session.user_id}, session.id)

    async def add_session_to_memory(self, session: Session) -> None:
        """Capture the session: its events with text, each stored once (re-adds skip them)."""
        await self.capture(session)

    async def capture(self, session: Session, **options: Any) -> CaptureResult:
        """:meth:`add_session_to_memory` with ``options`` for
        :func:`recallstore.capture.capture`, returning what it stored."""
        return await self._capture(
            session.app_name, session.user_id, session.events, session.id, options
        )

    async def _capture(
        self,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None,
        options: Mapping[str, Any],
    ) -> CaptureResult:
        return await capture(
            self.capability.store,
            self.scope(app_name, user_id),
            events,
            conversation_id=session_id or _NO_SESSION,
            # ADK keeps the author beside the text (MemoryEntry.author): no label in it.
            **{"tags": (_EVENT_TAG,), "label": False, **options},
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Capture ``events`` in the user's scope: each event with text once."""
        await self._capture(app_name, user_id, events, session_id, {})

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store explicit memories as ``fact`` records in the user's scope."""
        scope = self.scope(app_name, user_id)
        entries = [
            MemoryWriteInput(
                scope=scope,
                content=text,
                tags=(_EVENT_TAG,),
                provenance=Provenance(author=memory.author) if memory.author else None,
            )
            for memory in memories
            if (text := _text(memory.content))
        ]
        if entries:
            await self.capability.store.write(entries)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's valid memories matching ``query``, best first (newest without words)."""
        hits = await self.capability.store.search(
            MemorySearchQuery(
                query=query if query.strip() else None,
                scope=self.scope(app_name, user_id),
                limit=self._search_limit,
            )
        )
        return SearchMemoryResponse(memories=[_memory_entry(hit.record) for hit in hits])

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Forget one of the user's memories; another user's id is "not found" too."""
        if not memory_id:
            raise ConfigurationError(f"delete_memory needs a memory_id, got {memory_id!r}")
        record = await self.capability.store.get(memory_id)
        if record is None or not scope_matches(record.scope, self.scope(app_name, user_id)):
            raise MemoryNotFoundError(memory_id)
        await self.capability.store.delete(memory_id)


class _MemoryTool(BaseTool):
    """One memory tool; the scope is the running ADK session's, never the model's."""

    def __init__(
        self, service: RecallstoreMemoryService, name: str, description: str, schema: dict[str, Any]
    ) -> None:
        super().__init__(name=name, description=description)
        self._service = service
        self._schema = schema

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters_json_schema=self._schema
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        service = self._service
        session = service._session(tool_context.session)
        return await service._conversations.call(session, self.name, args)


class _PreloadMemoryTool(BaseTool):
    """Puts the Manual and the escaped recall block into the system instruction."""

    def __init__(self, service: RecallstoreMemoryService) -> None:
        # Never declared to the model: it only edits the request.
        super().__init__(name="recallstore_preload_memory", description="recallstore memory")
        self._service = service

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        session = tool_context.session
        first_user_text = next(
            (
                text
                for event in session.events
                if event.author == "user"
                if (text := _text(event.content))
            ),
            _text(tool_context.user_content),
        )
        service = self._service
        instructions = await service._conversations.instructions(
            service._session(session), first_user_text
        )
        llm_request.append_instructions([instructions])


def _text(content: types.Content | None) -> str:
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text and not part.thought).strip()


def _memory_entry(record: MemoryRecord) -> MemoryEntry:
    author = record.provenance.author if record.provenance else None
    return MemoryEntry(
        id=record.id,
        content=types.Content(
            role="user" if author == "user" else "model", parts=[types.Part(text=record.content)]
        ),
        author=author,
        timestamp=record.created_at.isoformat(),
        custom_metadata={"kind": record.kind, "tags": list(record.tags)},
    )
