"""CrewAI: the memory tools as CrewAI tools, the recall for an agent's backstory, and capture.

:class:`CrewAIMemory` serves one conversation of one host session on a
:class:`~recallstore.sync.SyncMemoryCapability` (CrewAI calls tools and runs crews
synchronously). Its :attr:`~CrewAIMemory.tools` are CrewAI ``BaseTool``\\s whose scope
is the session's, never the model's: CrewAI drops an argument the schema does not list
(``scope``), and the toolbox refuses one that reaches it. :meth:`~CrewAIMemory.instructions`
gives the Manual and the recall block, computed once per conversation, for the agent's
``backstory``, which CrewAI puts in the system prompt. :meth:`~CrewAIMemory.after_kickoff`,
in ``Crew(after_kickoff_callbacks=[...])``, captures each run (every task's description
and result) as episodes, once per message; :meth:`~CrewAIMemory.capture` captures any
transcript.

A model's mistake comes back as the tool's result (``{"ok": false, ...}``), which CrewAI
shows the model as the observation; CrewAI does not validate the arguments first (the
toolbox does), so a mistake never becomes a CrewAI tool error. CrewAI shows the model
any exception a tool raises, cause included, and carries on: so a store failure reaches
the model as ``unavailable`` (as over MCP) and the host in :attr:`~CrewAIMemory.failures`.

:class:`RecallstoreStorage` is CrewAI's own slot: a ``StorageBackend`` for its unified
``Memory`` (``Crew(memory=Memory(storage=..., embedder=storage.embedder))``), bound to
the host's scope, where ``update`` supersedes and ``delete`` invalidates.

Needs the ``crewai`` extra, in an environment of its own: CrewAI 1.15 pins ``mcp<2``,
which the ``mcp`` extra's ``mcp>=2`` excludes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import MemorySession, _result_text
from recallstore.adapters._unavailable import UNAVAILABLE
from recallstore.capture import CaptureResult
from recallstore.errors import StoreUnavailableError
from recallstore.sync import SyncMemoryCapability, capture

with _framework_imports("crewai", "the CrewAI adapter", "crewai"):
    from crewai.tools import BaseTool
    from pydantic import BaseModel, ConfigDict

from recallstore.adapters._crewai_storage import RecallstoreStorage

__all__ = ["CrewAIMemory", "MemorySession", "RecallstoreStorage"]


class CrewAIMemory:
    """Memory for one conversation of a CrewAI crew: ``tools``, ``instructions``, ``capture``."""

    def __init__(self, capability: SyncMemoryCapability, session: MemorySession) -> None:
        self._capability = capability
        self.session = session
        """The host's session: the scope and the conversation id, fixed here."""
        self._toolbox = capability.toolbox(
            session.scope, conversation_id=session.conversation_id, run_id=session.run_id
        )
        self._instructions: str | None = None
        self._transcript: list[tuple[str, str]] = []
        self.failures: list[StoreUnavailableError] = []
        """The store failures the tools met, oldest first (the model was told only
        ``unavailable``)."""
        self.tools: list[BaseTool] = [
            _MemoryTool(
                name=spec.name,
                description=spec.description,
                args_schema=_arguments(spec.name, spec.input_schema()),
                memory=self,
            )
            for spec in capability.capability.specs
        ]
        """The memory tools, for ``Agent(tools=...)``."""

    def instructions(self, first_user_text: str) -> str:
        """The Manual and recall block for the conversation (computed on the first call,
        from its first user message; the same text after)."""
        if self._instructions is None:
            self._instructions = self._capability.instantiate(
                self.session.scope,
                conversation_id=self.session.conversation_id,
                first_user_text=first_user_text,
                run_id=self.session.run_id,
            ).instructions
        return self._instructions

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run a model's call of memory tool ``name``: the result as JSON text."""
        try:
            return _result_text(self._toolbox.call(name, arguments))
        except StoreUnavailableError as exc:
            self.failures.append(exc)
            return _result_text(UNAVAILABLE)

    def after_kickoff(self, output: Any) -> Any:
        """CrewAI's ``after_kickoff_callbacks`` hook: add the run's tasks (description,
        result) to the conversation and capture it; returns ``output`` unchanged."""
        for task in getattr(output, "tasks_output", None) or []:
            self._transcript += [("user", str(task.description)), ("assistant", str(task.raw))]
        self.capture(self._transcript)
        return output

    def capture(self, messages: Iterable[Any], **options: Any) -> CaptureResult:
        """The end-of-conversation hook: store ``messages`` (the whole conversation so
        far, in any shape :func:`recallstore.capture.capture` reads) as episodes in the
        session's scope, once each."""
        return capture(
            self._capability.store,
            self._capability.capability.scope_for(self.session.scope),
            list(messages),
            conversation_id=self.session.conversation_id,
            **options,
        )


class _MemoryTool(BaseTool):
    """One memory tool; the toolbox validates its arguments."""

    memory: Any

    def _run(self, *args: Any, **arguments: Any) -> str:
        return self.memory.call(self.name, arguments)  # type: ignore[no-any-return]


def _arguments(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """An arguments model without fields (so CrewAI passes the model's arguments as they
    are) whose JSON schema, the one the model is shown, is the tool spec's."""

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="allow")

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return schema

    Arguments.__name__ = Arguments.__qualname__ = f"{name}_arguments"
    return Arguments
