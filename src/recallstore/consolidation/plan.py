"""The plan model: a closed set of operations on one scope, and its diff.

An operation is one of three: ``supersede`` (a newer record states the same thing
differently: the older one becomes invalid with ``superseded_by`` the newer),
``duplicate`` (a record equal to another becomes invalid, ``duplicate_of`` naming the
one kept) and ``noop`` (a record looked at and left as it is). There is no delete.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Self

from pydantic import Field, model_validator

from recallstore.records import MemoryRecord, _Contract, format_timestamp
from recallstore.values import MAX_ID_CHARS, MAX_REASON_CHARS

__all__ = ["Action", "Operation", "Plan", "PlannedRecord", "Rejection"]

Action = Literal["supersede", "duplicate", "noop"]


class Operation(_Contract):
    """One proposed change: what happens to ``record_id``, and why."""

    action: Action
    record_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    superseded_by: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    """``supersede`` only: the newer record that states it differently."""
    duplicate_of: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    """``duplicate`` only: the equal record that stays valid."""
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS // 2)

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        wanted = {"supersede": "superseded_by", "duplicate": "duplicate_of", "noop": None}
        for name in ("superseded_by", "duplicate_of"):
            given = getattr(self, name) is not None
            if given != (wanted[self.action] == name):
                verb = "must not name" if given else "needs"
                raise ValueError(f"a {self.action} operation {verb} {name}")
        if not self.reason.strip():
            raise ValueError("every operation needs a reason")
        return self

    @property
    def target_id(self) -> str | None:
        """The record that stays valid in its place (None for a no-op)."""
        return self.superseded_by or self.duplicate_of

    @property
    def changes(self) -> bool:
        """True unless it is a no-op."""
        return self.action != "noop"


class Rejection(_Contract):
    """A proposal validation refused, with why: it is not in the plan."""

    proposer: str
    operation: Operation
    problem: str


class PlannedRecord(_Contract):
    """What the plan's diff shows of a record it names (its state when planned)."""

    id: str
    kind: str
    content: str
    created_at: datetime

    @classmethod
    def of(cls, record: MemoryRecord) -> Self:
        """The part of ``record`` a diff shows."""
        return cls(
            id=record.id, kind=record.kind, content=record.content, created_at=record.created_at
        )


class Plan(_Contract):
    """A validated consolidation plan for one scope (see the module)."""

    id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    scope: dict[str, str]
    created_at: datetime
    proposers: tuple[str, ...]
    operations: tuple[Operation, ...]
    records: dict[str, PlannedRecord]
    """Every record an operation names, as it was when planned."""
    rejected: tuple[Rejection, ...] = ()

    @property
    def changes(self) -> tuple[Operation, ...]:
        """The operations that change a record (no no-ops)."""
        return tuple(op for op in self.operations if op.changes)

    @property
    def only_noops(self) -> bool:
        """True when applying the plan would change nothing."""
        return not self.changes

    def diff(self) -> str:
        """The plan as a readable diff: ``-`` the records it invalidates, ``=`` what stays."""
        lines = [
            f"plan {self.id} for {_scope_text(self.scope)}: {len(self.changes)} change(s), "
            f"{len(self.operations) - len(self.changes)} no-op(s), "
            f"{len(self.rejected)} rejected"
        ]
        for op in self.operations:
            record = self.records[op.record_id]
            if not op.changes:
                lines.append(f"  = {_line(record)}  (no-op: {op.reason})")
                continue
            target = self.records[op.target_id or ""]
            word = "superseded by" if op.action == "supersede" else "duplicate of"
            lines.append(f"  - {_line(record)}")
            lines.append(f"  = {_line(target)}  ({word}: {op.reason})")
        for rejection in self.rejected:
            lines.append(
                f"  ! rejected {rejection.operation.action} of {rejection.operation.record_id} "
                f"from {rejection.proposer}: {rejection.problem}"
            )
        return "\n".join(lines)


def _line(record: PlannedRecord) -> str:
    day = format_timestamp(record.created_at)[:10]
    return f"[{record.id} {record.kind} {day}] {record.content}"


def _scope_text(scope: dict[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in scope.items())
