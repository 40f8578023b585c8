"""pydantic-ai: a consolidation proposer backed by a model the host plugs in.

:class:`ModelProposer` shows a pydantic-ai model one scope's valid records and asks for
operations as structured output (``supersede``, ``duplicate``, ``noop``; never a
delete). pydantic-ai checks the output's shape and asks again when it is malformed;
consolidation then validates every operation as it would any proposer's (same scope,
existing valid ids, a cap, a reason) before it can be applied. Needs the
``pydantic-ai`` extra::

    plan = await consolidate(store, scope, proposers=[ModelProposer("openai:gpt-4o")])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, Self

from pydantic import BaseModel, Field, model_validator

from recallstore.adapters._framework import _framework_imports
from recallstore.consolidation import Operation
from recallstore.records import MemoryRecord
from recallstore.values import model_date

with _framework_imports("pydantic_ai", "the pydantic-ai proposer", "pydantic-ai"):
    from pydantic_ai import Agent

__all__ = ["PROPOSER_INSTRUCTIONS", "ModelProposer", "ProposedOperation", "ProposedOperations"]

PROPOSER_INSTRUCTIONS: Final = (
    "You tidy one user's saved memories. Each line is one memory: its id, kind, the day "
    "it was saved, and its text. Find memories that say the same thing (duplicate: name "
    "the one to keep in `replaced_by`) and memories a newer one corrects or contradicts "
    "(supersede: name the newer memory in `replaced_by`). Give a short reason for each. "
    "Never propose anything for memories that are merely related; when unsure, propose "
    "nothing. You cannot delete, and you cannot change a memory's text."
)
"""The model's instructions (pinned by a snapshot test)."""


class ProposedOperation(BaseModel):
    """One operation as the model states it."""

    action: Literal["supersede", "duplicate", "noop"]
    record_id: str = Field(description="The id of the memory this operation is about.")
    replaced_by: str | None = Field(
        default=None,
        description="supersede: the newer memory that corrects it; duplicate: the equal "
        "memory to keep; noop: null.",
    )
    reason: str = Field(min_length=1, description="Why, in one short sentence.")

    @model_validator(mode="after")
    def _target(self) -> Self:
        if (self.replaced_by is None) != (self.action == "noop"):
            raise ValueError("supersede and duplicate need replaced_by; noop takes none")
        return self

    def operation(self) -> Operation:
        """The consolidation operation it states."""
        return Operation(
            action=self.action,
            record_id=self.record_id,
            superseded_by=self.replaced_by if self.action == "supersede" else None,
            duplicate_of=self.replaced_by if self.action == "duplicate" else None,
            reason=self.reason[:500],
        )


class ProposedOperations(BaseModel):
    """The model's answer: the operations it proposes (possibly none)."""

    operations: list[ProposedOperation]


class ModelProposer:
    """A :class:`~recallstore.consolidation.Proposer` asking a pydantic-ai model.

    ``model`` is anything ``pydantic_ai.Agent`` takes (a model object or a name such as
    ``"openai:gpt-4o"``). At most ``max_records`` records, the newest, are shown per run.
    """

    def __init__(
        self, model: Any, *, name: str = "pydantic-ai-model", max_records: int = 200
    ) -> None:
        """Ask ``model``; ``name`` is shown in plans and rejections."""
        self._agent: Agent[None, ProposedOperations] = Agent(
            model, output_type=ProposedOperations, instructions=PROPOSER_INSTRUCTIONS
        )
        self._name = name
        self._max_records = max_records

    @property
    def name(self) -> str:
        """The name shown in plans and rejections."""
        return self._name

    async def propose(self, records: Sequence[MemoryRecord]) -> Sequence[Operation]:
        """The model's operations on ``records`` (nothing asked when there are none)."""
        shown = list(records)[-self._max_records :]
        if not shown:
            return []
        result = await self._agent.run(memory_lines(shown))
        return [item.operation() for item in result.output.operations]


def memory_lines(records: Sequence[MemoryRecord]) -> str:
    """The records as the model reads them, one per line, oldest first."""
    return "\n".join(
        f"- id={record.id} {record.kind} saved {model_date(record.created_at)}: "
        + " ".join(record.content.split())
        for record in records
    )
