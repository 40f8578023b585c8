"""What every framework adapter shares: the host's session, and one recall per conversation.

A framework adapter learns who is talking from the host's run context (pydantic-ai's
deps, the Agents SDK's context, LangChain's config, ADK's session), never from the
model. :class:`MemorySession` is that answer; :class:`_Conversations` turns it into a
toolbox for each tool call and computes the Manual and recall block once per
conversation, so the instructions stay byte-identical from turn to turn and a
provider's prompt cache keeps hitting.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult, capture
from recallstore.errors import ConfigurationError
from recallstore.toolbox import MemoryToolbox

__all__ = ["MemorySession"]

_MAX_CONVERSATIONS = 1_024
"""Conversations whose instructions are kept; the oldest is recomputed if it comes back."""


@dataclass(frozen=True, slots=True)
class MemorySession:
    """Who is talking, as the host knows it: the session scope and the conversation id.

    ``scope`` is the session scope; the capability's ``scope_fields`` pick the memory
    scope from it (a session missing one is refused with ``ConfigurationError``).
    ``conversation_id`` names the conversation: its recall is computed once.
    """

    scope: Mapping[str, str]
    conversation_id: str
    run_id: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.conversation_id, str) or not self.conversation_id.strip():
            raise ConfigurationError(
                f"MemorySession needs a non-empty conversation_id, got {self.conversation_id!r}"
            )


def _as_session(value: object, source: str) -> MemorySession:
    """``value`` if it is a MemorySession; otherwise a ConfigurationError naming ``source``."""
    if isinstance(value, MemorySession):
        return value
    raise ConfigurationError(
        f"{source} must give a recallstore MemorySession (the host's scope and conversation "
        f"id), got {type(value).__name__}: {value!r}; pass session=... to map your own type"
    )


class _Conversations:
    """Per-conversation memory for one capability: toolboxes, and instructions computed once."""

    def __init__(self, capability: MemoryCapability) -> None:
        if not isinstance(capability, MemoryCapability):
            raise ConfigurationError(
                f"expected a recallstore MemoryCapability, got {type(capability).__name__}"
            )
        self.capability = capability
        self._instructions: OrderedDict[tuple[str, str], str] = OrderedDict()

    def toolbox(self, session: MemorySession) -> MemoryToolbox:
        """The session's toolbox (raises ConfigurationError when its scope lacks a field)."""
        return self.capability.toolbox(
            session.scope, conversation_id=session.conversation_id, run_id=session.run_id
        )

    async def call(
        self, session: MemorySession, name: str, arguments: Mapping[str, Any] | str | None
    ) -> dict[str, Any]:
        """Run the model's tool call in the session's scope: a result or an error result."""
        return await self.toolbox(session).call(name, arguments)

    async def capture(
        self, session: MemorySession, transcript: Iterable[Any], options: Mapping[str, Any]
    ) -> CaptureResult:
        """Capture the session's conversation in its memory scope (docs/capture.md)."""
        return await capture(
            self.capability.store,
            self.capability.scope_for(session.scope),
            transcript,
            conversation_id=session.conversation_id,
            **options,
        )

    async def instructions(self, session: MemorySession, first_user_text: str) -> str:
        """The Manual and recall block for the session's conversation, computed on first use."""
        scope = self.capability.scope_for(session.scope)
        key = (session.conversation_id, json.dumps(scope, sort_keys=True))
        cached = self._instructions.get(key)
        if cached is not None:
            self._instructions.move_to_end(key)
            return cached
        memory = await self.capability.instantiate(
            scope,
            conversation_id=session.conversation_id,
            first_user_text=first_user_text,
            run_id=session.run_id,
        )
        # Two first requests racing: the first to finish wins, so both see the same text.
        text = self._instructions.setdefault(key, memory.instructions)
        while len(self._instructions) > _MAX_CONVERSATIONS:
            self._instructions.popitem(last=False)
        return text


def _result_text(result: Mapping[str, Any]) -> str:
    """A tool result as the compact JSON text frameworks hand the model."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def _is_error(result: Mapping[str, Any]) -> bool:
    return result.get("ok") is False
