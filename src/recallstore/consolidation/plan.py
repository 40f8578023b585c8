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

__all__ = ["WITHHELD", "Action", "Operation", "Plan", "PlannedRecord", "Rejection"]

Action = Literal["supersede", "duplicate", "noop"]

WITHHELD = "(withheld: the plan named a record that was deleted since)"
"""The reason every operation of a redacted plan shows (see :meth:`Plan.redacted`)."""


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
    content: str | None
    """None in a redacted plan: the record was deleted since (``Plan.forgotten``), or
    its text is read back from the store (:func:`~recallstore.consolidation.kept_plans`)."""
    created_at: datetime
    observed_at: datetime | None = None
    """When the thing was said (the record's ``observed_at``); None in a plan kept
    before plans recorded it, whose diff shows the save day alone."""

    @classmethod
    def of(cls, record: MemoryRecord) -> Self:
        """The part of ``record`` a diff shows."""
        return cls(
            id=record.id,
            kind=record.kind,
            content=record.content,
            created_at=record.created_at,
            observed_at=record.observed_at,
        )

    @property
    def days(self) -> str:
        """The day it was said, ``YYYY-MM-DD`` in UTC, and the save day beside it when
        that is another day: ``2026-11-28, saved 2026-12-05``."""
        saved = format_timestamp(self.created_at)[:10]
        if self.observed_at is None:
            return saved
        said = format_timestamp(self.observed_at)[:10]
        return said if said == saved else f"{said}, saved {saved}"


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
    forgotten: tuple[str, ...] = ()
    """Records the plan named that ``delete``/``forget`` removed after it was applied:
    their text is gone from the plan (it keeps ids only, see :meth:`redacted`)."""
    withheld: bool = False
    """True for a redacted plan: no record text, reasons or rejections of its own."""

    def redacted(self) -> Plan:
        """The plan as kept once a record it names is deleted: ids, kinds, actions and
        times, never text — no contents, reasons, rejections or scope values (the
        revision keeps the scope while it may)."""
        return self.model_copy(
            update={
                "scope": {},
                "records": {
                    key: record.model_copy(update={"content": None})
                    for key, record in self.records.items()
                },
                "operations": tuple(
                    op.model_copy(update={"reason": WITHHELD}) for op in self.operations
                ),
                "rejected": (),
                "withheld": True,
            }
        )

    @property
    def changes(self) -> tuple[Operation, ...]:
        """The operations that change a record (no no-ops)."""
        return tuple(op for op in self.operations if op.changes)

    @property
    def only_noops(self) -> bool:
        """True when applying the plan would change nothing."""
        return not self.changes

    def diff(self) -> str:
        """The plan as a readable diff: ``-`` the records it invalidates, ``=`` what stays;
        each record as ``[id kind day]``, the day it was said (``observed_at``), with the
        save day beside it when that is another day (``[id fact 2026-11-28, saved
        2026-12-05]``)."""
        lines = [
            f"plan {self.id} for {_scope_text(self.scope)}: {len(self.changes)} change(s), "
            f"{len(self.operations) - len(self.changes)} no-op(s), "
            f"{len(self.rejected)} rejected"
        ]
        if self.forgotten:
            lines.append(
                f"  {len(self.forgotten)} record(s) it named were forgotten since "
                f"(deleted; their text is gone): {', '.join(self.forgotten)}"
            )
        for op in self.operations:
            record = self._planned(op.record_id)
            if not op.changes:
                lines.append(f"  = {self._line(record)}  (no-op: {op.reason})")
                continue
            target = self._planned(op.target_id or "")
            word = "superseded by" if op.action == "supersede" else "duplicate of"
            lines.append(f"  - {self._line(record)}")
            lines.append(f"  = {self._line(target)}  ({word}: {op.reason})")
        for rejection in self.rejected:
            lines.append(
                f"  ! rejected {rejection.operation.action} of {rejection.operation.record_id} "
                f"from {rejection.proposer}: {rejection.problem}"
            )
        return "\n".join(lines)

    def _planned(self, record_id: str) -> PlannedRecord | str:
        return self.records.get(record_id, record_id)

    def _line(self, record: PlannedRecord | str) -> str:
        if isinstance(record, str):  # a plan kept without the record (never made so)
            return f"[{record}]"
        day = record.days
        if record.id in self.forgotten:
            return f"[{record.id} {record.kind} {day}] (forgotten)"
        text = "(text withheld)" if record.content is None else record.content
        return f"[{record.id} {record.kind} {day}] {text}"


def _scope_text(scope: dict[str, str]) -> str:
    if not scope:  # only a plan whose whole scope was forgotten
        return "(a forgotten scope)"
    return ",".join(f"{key}={value}" for key, value in scope.items())
