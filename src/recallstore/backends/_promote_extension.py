"""The ``"promote"`` extension's half of a backend: corroborate, promote, demote and the
evolution ledger over four primitives (issue 39, kit S25–S27).

The rules of :mod:`recallstore.store.learning` are checked here, once for every
backend, inside one write transaction: the record is read through it (locked where
the backend locks), every precondition — the host's gate included — is checked
before anything changes, then the record's ``supports`` are set (corroborate) and
one ledger row is appended, and journaled as an ``agent.memory.learn`` event. What is
promoted derives from the ledger rows. A backend lists :class:`PromotesRecords`
before ``BaseMemoryStore``, declares :data:`~recallstore.store.PROMOTE_EXTENSION`
and implements the four primitives (a table from an append-only migration, or a
list). ``delete`` and ``forget`` erase the rows of what they delete
(:meth:`PromotesRecords._erase_ledger`, called from ``_forget_traces``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from recallstore.backends.journal import JournalSettings, envelope
from recallstore.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from recallstore.records import MemoryRecord, MemoryTarget, Provenance
from recallstore.store import MonotonicClock, is_storable_id, new_record_id, scope_matches
from recallstore.store.learning import (
    LEARN_EVENT_TYPE,
    MAX_SUPPORTS,
    PROMOTE_EXTENSION,
    LedgerAction,
    LedgerEntry,
    Promotion,
    PromotionGate,
    PromotionRefusedError,
    check_actor,
    check_ledger_reason,
    check_promotion_target,
    evidence_of,
    promotions_from,
)
from recallstore.values import canonical_scope

__all__ = ["PromotesRecords", "learn_data"]

Handle = TypeVar("Handle")


def learn_data(entry: LedgerEntry, supports: int) -> dict[str, Any]:
    """The journal data of one ledger row: ids, counts and the target, never the
    evidence itself (conversation ids are erased with a forgotten record's traces)."""
    return {
        "action": entry.action,
        "record_ids": [entry.record_id],
        "ledger_id": entry.id,
        "target": None if entry.target is None else entry.target.section,
        "evidence_count": len(entry.evidence),
        "conversation_count": len(entry.conversations),
        "supports": supports,
        "approved": entry.approved_by is not None,
    }


def _check_id(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise MemoryValidationError("id", "must be a non-empty string", value)
    return value


def _check_scope(scope: Mapping[str, str]) -> dict[str, str]:
    pairs = canonical_scope(scope)
    if not pairs:
        raise MemoryValidationError("scope", "learning needs the record's non-empty scope", {})
    return pairs


class PromotesRecords(Generic[Handle]):
    """``corroborate``/``promote``/``demote``/``promotions``/``ledger`` for a
    ``BaseMemoryStore`` subclass (see the module)."""

    _journal: JournalSettings | None
    _clock: MonotonicClock
    extensions: ClassVar[frozenset[str]]

    if TYPE_CHECKING:  # provided by BaseMemoryStore

        def _check_open(self) -> None: ...

        def _now(self) -> datetime: ...

        def _writing(self) -> AbstractAsyncContextManager[Handle]: ...

        def _reading(self) -> AbstractAsyncContextManager[Handle]: ...

        async def _fetch_records(
            self, handle: Handle, ids: Sequence[str]
        ) -> dict[str, MemoryRecord]: ...

        async def _append_journal(
            self, handle: Handle, rows: Sequence[Mapping[str, Any]], max_events: int
        ) -> None: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if PROMOTE_EXTENSION in getattr(cls, "extensions", frozenset()) and (
            cls._append_ledger is PromotesRecords._append_ledger
        ):
            raise TypeError(f"{cls.__name__} declares the 'promote' extension but no ledger")

    async def corroborate(
        self,
        scope: Mapping[str, str],
        id: str,
        evidence: Provenance,
        *,
        actor: str,
        reason: str,
    ) -> MemoryRecord:
        """Add ``evidence`` to the record's ``supports`` (S25); see
        :meth:`~recallstore.store.SupportsPromotion.corroborate`."""
        pairs = _check_scope(scope)
        _check_id(id)
        if not isinstance(evidence, Provenance) or evidence == Provenance():
            raise MemoryValidationError(
                "evidence", "must be a Provenance naming a conversation, run or author", evidence
            )
        who, why = check_actor(actor), check_ledger_reason(reason)
        self._check_open()
        async with self._writing() as handle:
            record = await self._record_of(handle, pairs, id)
            if record.status(self._now()) != "valid":
                raise MemoryConflictError(id, f"a {record.status(self._now())} record")
            known = evidence_of(record)
            if evidence in known:
                return record
            if len(known) >= MAX_SUPPORTS:
                raise MemoryConflictError(id, f"it keeps {MAX_SUPPORTS} supports, the most")
            stamp = self._clock()
            supports = (*known, evidence)
            await self._set_supports(handle, id, supports, stamp)
            entry = LedgerEntry(
                id=new_record_id(),
                scope=pairs,
                record_id=id,
                action="corroborate",
                at=stamp,
                actor=who,
                reason=why,
                evidence=(evidence,),
            )
            await self._append_ledger(handle, entry)
            await self._journal_learn(handle, entry, len(supports))
        return record.model_copy(update={"supports": supports, "updated_at": stamp})

    async def promote(
        self,
        scope: Mapping[str, str],
        id: str,
        target: MemoryTarget,
        *,
        gate: PromotionGate,
        actor: str,
        reason: str,
        approved_by: str | None = None,
    ) -> Promotion:
        """Promote through ``gate`` (S26); see
        :meth:`~recallstore.store.SupportsPromotion.promote`."""
        pairs = _check_scope(scope)
        _check_id(id)
        check_promotion_target(target)
        if not isinstance(gate, PromotionGate):
            raise MemoryValidationError("gate", "must be a PromotionGate", gate)
        who, why = check_actor(actor), check_ledger_reason(reason)
        approver = None if approved_by is None else check_actor(approved_by, "approved_by")
        self._check_open()
        async with self._writing() as handle:
            record = await self._record_of(handle, pairs, id)
            if await self._promotion_of(handle, id) is not None:
                raise MemoryConflictError(id, "it is promoted already")
            decision = gate.evaluate(record, target, self._now(), approver)
            if not decision.allowed:
                raise PromotionRefusedError(id, decision)
            entry = await self._keep(
                handle, pairs, id, "promote", who, why, decision.evidence, target, approver
            )
            await self._journal_learn(handle, entry, len(evidence_of(record)))
        (promotion,) = promotions_from([entry])
        return promotion

    async def demote(
        self, scope: Mapping[str, str], id: str, *, actor: str, reason: str
    ) -> LedgerEntry:
        """Take a promotion back (S26); see :meth:`~recallstore.store.SupportsPromotion.demote`."""
        pairs = _check_scope(scope)
        _check_id(id)
        who, why = check_actor(actor), check_ledger_reason(reason)
        self._check_open()
        async with self._writing() as handle:
            record = await self._record_of(handle, pairs, id)
            promotion = await self._promotion_of(handle, id)
            if promotion is None:
                raise MemoryConflictError(id, "it is not promoted")
            entry = await self._keep(
                handle, pairs, id, "demote", who, why, (), promotion.target, None
            )
            await self._journal_learn(handle, entry, len(evidence_of(record)))
        return entry

    async def promotions(self, scope: Mapping[str, str]) -> list[Promotion]:
        """The promotions of exactly ``scope``, oldest first."""
        pairs = _check_scope(scope)
        self._check_open()
        async with self._reading() as handle:
            rows = await self._ledger_rows(handle, None)
        return promotions_from(row for row in rows if row.scope == pairs)

    async def ledger(
        self, scope: Mapping[str, str] | None = None, *, record_id: str | None = None
    ) -> list[LedgerEntry]:
        """Ledger rows whose scope contains ``scope``, oldest first (S27)."""
        pairs = canonical_scope(scope or {})
        if record_id is not None:
            _check_id(record_id)
        self._check_open()
        if record_id is not None and not is_storable_id(record_id):
            return []
        async with self._reading() as handle:
            rows = await self._ledger_rows(handle, record_id)
        return [row for row in rows if scope_matches(row.scope, pairs)]

    # --- shared steps ---------------------------------------------------------------------

    async def _record_of(self, handle: Handle, scope: dict[str, str], id: str) -> MemoryRecord:
        found = await self._fetch_records(handle, [id] if is_storable_id(id) else [])
        record = found.get(id)
        if record is None or record.scope != scope:
            raise MemoryNotFoundError(id)
        return record

    async def _promotion_of(self, handle: Handle, id: str) -> Promotion | None:
        found = promotions_from(await self._ledger_rows(handle, id))
        return found[0] if found else None

    async def _keep(
        self,
        handle: Handle,
        scope: dict[str, str],
        id: str,
        action: LedgerAction,
        actor: str,
        reason: str,
        evidence: tuple[Provenance, ...],
        target: MemoryTarget | None,
        approved_by: str | None,
    ) -> LedgerEntry:
        entry = LedgerEntry(
            id=new_record_id(),
            scope=scope,
            record_id=id,
            action=action,
            at=self._clock(),
            actor=actor,
            reason=reason,
            evidence=evidence,
            target=target,
            approved_by=approved_by,
        )
        await self._append_ledger(handle, entry)
        return entry

    async def _journal_learn(self, handle: Handle, entry: LedgerEntry, supports: int) -> None:
        if self._journal is None:
            return
        row = envelope(LEARN_EVENT_TYPE, entry.scope, learn_data(entry, supports), entry.at)
        await self._append_journal(handle, [row], self._journal.max_events)

    async def _erase_ledger(
        self, handle: Handle, deleted: frozenset[str], scope: Mapping[str, str] | None
    ) -> None:
        """In the deleting transaction ``handle``: delete the ledger rows of the records
        ``deleted`` and, for a forget, every row whose scope contains ``scope``."""
        if PROMOTE_EXTENSION not in self.extensions or not (deleted or scope):
            return
        doomed = [
            row.id
            for record_id in sorted(deleted)
            for row in await self._ledger_rows(handle, record_id)
        ]
        if scope:
            doomed += [
                row.id
                for row in await self._ledger_rows(handle, None)
                if scope_matches(row.scope, scope)
            ]
        if doomed:
            await self._delete_ledger_rows(handle, sorted(set(doomed)))

    # --- what a backend implements --------------------------------------------------------

    async def _set_supports(
        self, handle: Handle, id: str, supports: tuple[Provenance, ...], at: datetime
    ) -> None:
        """Overwrite the record's ``supports`` and set its ``updated_at`` to ``at``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no ledger")

    async def _append_ledger(self, handle: Handle, entry: LedgerEntry) -> None:
        """Append ``entry`` in the transaction ``handle``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no ledger")

    async def _ledger_rows(self, handle: Handle, record_id: str | None) -> list[LedgerEntry]:
        """Every ledger row (of ``record_id`` only, when given), oldest first."""
        raise NotImplementedError(f"{type(self).__name__} keeps no ledger")

    async def _delete_ledger_rows(self, handle: Handle, ids: Sequence[str]) -> None:
        """Delete the ledger rows ``ids`` in the transaction ``handle``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no ledger")
