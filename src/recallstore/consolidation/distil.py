"""Distillation: facts a model draws from captured conversations, as a reviewable plan.

A :class:`Distiller` (a model the host plugs in, e.g.
:class:`~recallstore.adapters.pydantic_ai_distiller.ModelDistiller`) reads the
captured records of one scope (:mod:`recallstore.capture`: one ``episode`` per
message) and proposes facts, each a :class:`ProposedFact` citing the captured records
it rests on and saying why. Nothing it says is trusted:
:func:`~recallstore.consolidation.validate.check_facts` turns each proposal into a
:class:`PlannedFact` of the plan (its citations read back from the store: conversation
and turn) or a :class:`FactRejection` saying what is wrong. A :class:`Distillation` is
the validated plan; :meth:`Distillation.diff` shows it. Applying and reverting it live
in :mod:`recallstore.consolidation.distil_run`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final, Literal, Protocol, Self, runtime_checkable

from pydantic import Field

from recallstore.consolidation.plan import PlannedRecord
from recallstore.records import MemoryRecord, _Contract
from recallstore.values import MAX_CONTENT_CHARS, MAX_ID_CHARS, MAX_REASON_CHARS

__all__ = [
    "DISTILLED_TAG",
    "Citation",
    "Distillation",
    "Distiller",
    "FactKind",
    "FactRejection",
    "PlannedFact",
    "ProposedFact",
    "UnusableFact",
]

FactKind = Literal["fact", "preference"]
"""What a distilled record may be: a fact, or a preference of the user."""

DISTILLED_TAG: Final = "distilled"
"""The tag of every record a distillation wrote."""

_MAX_CITES: Final = 50


class ProposedFact(_Contract):
    """One fact as a distiller proposes it: its text, kind, the captured records it
    rests on (``cites``, record ids) and why."""

    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    kind: FactKind = "fact"
    cites: tuple[str, ...] = Field(min_length=1, max_length=_MAX_CITES)
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS // 2)


class UnusableFact(ProposedFact):
    """A suggestion its distiller could not state as a fact (a model's answer with no
    citation, say), and why: never in a plan's facts, always among its rejections."""

    problem: str = Field(min_length=1, max_length=MAX_REASON_CHARS)

    @classmethod
    def of(cls, content: object, reason: object, problem: str) -> Self:
        """The rejection-to-be of a suggestion saying ``content`` for ``reason`` (any
        values: one that is not usable text becomes ``"?"``)."""

        def text(value: object, limit: int) -> str:
            ok = isinstance(value, str) and value.strip() and len(value) <= limit
            return value if ok and isinstance(value, str) else "?"

        return cls(
            content=text(content, MAX_CONTENT_CHARS),
            cites=("?",),
            reason=text(reason, MAX_REASON_CHARS // 2),
            problem=problem[:MAX_REASON_CHARS],
        )


@runtime_checkable
class Distiller(Protocol):
    """Proposes facts from one scope's captured records; a model is behind it."""

    @property
    def name(self) -> str:
        """A short name shown in the plan, its rejections and the records' provenance."""
        ...

    async def distil(self, records: Sequence[MemoryRecord]) -> Sequence[ProposedFact]:
        """Facts drawn from ``records`` (valid captured records of one exact scope, in
        conversation order)."""
        ...


class Citation(_Contract):
    """One captured record a planned fact rests on, as the store holds it."""

    record_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    conversation_id: str | None = None
    """The conversation it was captured from (its provenance)."""
    message: int | str | None = None
    """The turn: the message's index in the captured transcript (or its id)."""


class PlannedFact(_Contract):
    """A validated fact of a plan: a new record, or evidence for an equal one."""

    content: str
    kind: FactKind
    reason: str
    proposer: str
    citations: tuple[Citation, ...]
    corroborates: str | None = None
    """The valid record of the scope that already says this (the write-time duplicate
    check): the plan adds the citations' conversations to its evidence instead of a copy."""

    @property
    def conversations(self) -> tuple[str, ...]:
        """The distinct conversations the fact rests on, in citation order."""
        found = (c.conversation_id for c in self.citations)
        return tuple(dict.fromkeys(c for c in found if c))


class FactRejection(_Contract):
    """A proposal validation refused, with why: it is not in the plan."""

    proposer: str
    fact: ProposedFact
    problem: str


class Distillation(_Contract):
    """A validated distillation plan for one scope (see the module)."""

    id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    scope: dict[str, str]
    created_at: datetime
    proposers: tuple[str, ...]
    facts: tuple[PlannedFact, ...]
    quotes: dict[str, PlannedRecord]
    """Every record a fact cites or corroborates, as it was when planned."""
    rejected: tuple[FactRejection, ...] = ()

    @property
    def added(self) -> tuple[PlannedFact, ...]:
        """The facts that become new records."""
        return tuple(f for f in self.facts if f.corroborates is None)

    @property
    def corroborations(self) -> tuple[PlannedFact, ...]:
        """The facts an existing record already states: evidence for it."""
        return tuple(f for f in self.facts if f.corroborates is not None)

    def diff(self) -> str:
        """The plan as a readable diff: ``+`` a new record, ``~`` evidence for an existing
        one, each with the turns it cites; ``!`` a rejected proposal."""
        scope = ",".join(f"{k}={v}" for k, v in self.scope.items())
        lines = [
            f"distillation {self.id} for {scope}: {len(self.added)} new fact(s), "
            f"{len(self.corroborations)} corroboration(s), {len(self.rejected)} rejected"
        ]
        for fact in self.facts:
            if fact.corroborates is None:
                lines.append(f"  + [{fact.kind}] {fact.content}  ({fact.reason})")
            else:
                lines.append(
                    f"  ~ [{fact.corroborates}] {fact.content}  (corroborated: {fact.reason})"
                )
            for citation in fact.citations:
                quoted = self.quotes.get(citation.record_id)
                text = "" if quoted is None or quoted.content is None else quoted.content
                lines.append(
                    f"      cites [{citation.record_id} {citation.conversation_id or '?'} "
                    f"#{citation.message if citation.message is not None else '?'}] {text}"
                )
        for rejection in self.rejected:
            lines.append(
                f"  ! rejected {rejection.fact.content!r} from {rejection.proposer}: "
                f"{rejection.problem}"
            )
        return "\n".join(lines)
