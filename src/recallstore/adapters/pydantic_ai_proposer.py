"""pydantic-ai: a consolidation proposer backed by a model the host plugs in.

:class:`ModelProposer` shows a pydantic-ai model one scope's valid records and asks for
operations as structured output (``supersede``, ``duplicate``, ``noop``; never a
delete). The output schema says per action what it needs; pydantic-ai checks the
answer's shape and asks again when it is malformed. An answer still malformed then
does not end the plan: each of its items becomes an operation or, when it is none, a
rejection saying what is wrong (the other proposers' work stands). Consolidation then
validates every operation as it would any proposer's (same scope, existing valid ids,
a cap, a reason) before it can be applied. Needs the ``pydantic-ai`` extra::

    plan = await consolidate(store, scope, proposers=[ModelProposer("openai:gpt-4o")])
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from recallstore.adapters._framework import _framework_imports
from recallstore.consolidation import Operation, UnusableProposal
from recallstore.errors import MemoryValidationError
from recallstore.records import MemoryRecord
from recallstore.values import MAX_ID_CHARS, MAX_REASON_CHARS, model_date

with _framework_imports("pydantic_ai", "the pydantic-ai proposer", "pydantic-ai"):
    from pydantic_ai import Agent, capture_run_messages
    from pydantic_ai.exceptions import UnexpectedModelBehavior
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart

__all__ = [
    "PROPOSER_INSTRUCTIONS",
    "ModelProposer",
    "ProposedDuplicate",
    "ProposedNoop",
    "ProposedOperation",
    "ProposedOperations",
    "ProposedSupersede",
]

_MAX_REASON: Final = MAX_REASON_CHARS // 2
_MAX_PROBLEM: Final = 600
_MAX_SHOWN: Final = 200

PROPOSER_INSTRUCTIONS: Final = (
    "You tidy one user's saved memories. Each line is one memory: its id, kind, the day "
    "it was saved, and its text. Find memories that say the same thing (duplicate: name "
    "the one to keep in `replaced_by`) and memories a newer one corrects or contradicts "
    "(supersede: name the newer memory in `replaced_by`). Give a short reason for each. "
    "Never propose anything for memories that are merely related; when unsure, propose "
    "nothing. You cannot delete, and you cannot change a memory's text."
)
"""The model's instructions (pinned by a snapshot test)."""


_RECORD_ID: Final = "The id of the memory this operation is about."
_REASON: Final = "Why, in one short sentence."


class ProposedSupersede(BaseModel):
    """A newer memory corrects or contradicts ``record_id``: it names it in ``replaced_by``."""

    action: Literal["supersede"]
    record_id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description=_RECORD_ID)
    replaced_by: str = Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="The id of the newer memory that corrects it.",
    )
    reason: str = Field(min_length=1, description=_REASON)


class ProposedDuplicate(BaseModel):
    """``record_id`` says the same as ``replaced_by``, the memory to keep."""

    action: Literal["duplicate"]
    record_id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description=_RECORD_ID)
    replaced_by: str = Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="The id of the equal memory to keep.",
    )
    reason: str = Field(min_length=1, description=_REASON)


class ProposedNoop(BaseModel):
    """``record_id`` was looked at and stays as it is."""

    action: Literal["noop"]
    record_id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description=_RECORD_ID)
    reason: str = Field(min_length=1, description=_REASON)


ProposedOperation = Annotated[
    ProposedSupersede | ProposedDuplicate | ProposedNoop, Field(discriminator="action")
]
"""One operation as the model states it: the schema says, per action, what it needs
(``replaced_by`` for ``supersede`` and ``duplicate``, none for ``noop``)."""
_ONE: Final[TypeAdapter[ProposedSupersede | ProposedDuplicate | ProposedNoop]] = TypeAdapter(
    ProposedOperation
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
        with capture_run_messages() as messages:
            try:
                result = await self._agent.run(memory_lines(shown))
            except UnexpectedModelBehavior as exc:
                # Asked again and still unusable: what it said becomes rejections.
                return _salvaged(messages, exc)
        return [_operation(item) for item in result.output.operations]


def _operation(item: ProposedSupersede | ProposedDuplicate | ProposedNoop) -> Operation:
    """The consolidation operation ``item`` states, or, when it states none (a blank
    reason, say), an :class:`UnusableProposal` saying why."""
    target = None if isinstance(item, ProposedNoop) else item.replaced_by
    try:
        return Operation(
            action=item.action,
            record_id=item.record_id,
            superseded_by=target if item.action == "supersede" else None,
            duplicate_of=target if item.action == "duplicate" else None,
            reason=item.reason[:_MAX_REASON],
        )
    except MemoryValidationError as exc:
        problem = f"the model's {item.action} is not a valid operation: {exc.message}"
        return UnusableProposal.of(item.record_id, item.reason, problem)


def _salvaged(messages: list[ModelMessage], failure: UnexpectedModelBehavior) -> list[Operation]:
    """The model's last answer, item by item: each a valid operation or an unusable
    proposal naming what is wrong with it; one unusable proposal if nothing in it is
    a list of operations."""
    answer = _last_answer(messages)
    items = answer.get("operations") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        problem = f"the model gave no usable answer: {failure.message}"
        return [UnusableProposal.of(None, None, problem[:_MAX_PROBLEM])]
    found: list[Operation] = []
    for item in items:
        try:
            found.append(_operation(_ONE.validate_python(item)))
        except ValidationError as exc:
            said = item if isinstance(item, dict) else {}
            error = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in error["loc"]) or "the operation"
            shown = json.dumps(item, ensure_ascii=False, default=repr)[:_MAX_SHOWN]
            problem = f"the model's answer is not an operation ({where}: {error['msg']}): {shown}"
            found.append(UnusableProposal.of(said.get("record_id"), said.get("reason"), problem))
    return found


def _last_answer(messages: list[ModelMessage]) -> Any:
    """The arguments of the model's last output-tool call, or None (no call, not JSON)."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            calls = [part for part in message.parts if isinstance(part, ToolCallPart)]
            if calls:
                try:
                    return calls[-1].args_as_dict()
                except ValueError:  # not JSON
                    return None
            return None
    return None


def memory_lines(records: Sequence[MemoryRecord]) -> str:
    """The records as the model reads them, one per line, oldest first."""
    return "\n".join(
        f"- id={record.id} {record.kind} saved {model_date(record.created_at)}: "
        + " ".join(record.content.split())
        for record in records
    )
