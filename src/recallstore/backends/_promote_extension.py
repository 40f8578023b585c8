"""The ``"promote"`` extension's half of a backend: corroborate, withdraw, promote, demote
and the evolution ledger over four primitives (issue 39, kit S25–S28).

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
    Corroboration,
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


def _check_batch(
    scope: Mapping[str, str], items: Sequence[Corroboration], actor: str
) -> tuple[dict[str, str], str, list[tuple[Corroboration, str]]]:
    """The scope, the actor and each item with its checked reason; else
    :class:`MemoryValidationError` (nothing changed)."""
    pairs = _check_scope(scope)
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence) or not items:
        raise MemoryValidationError("items", "must be a non-empty list of Corroboration", items)
    checked = []
    for item in items:
        if not isinstance(item, Corroboration):
            raise MemoryValidationError("items", "must hold Corroboration values", item)
        _check_id(item.record_id)
        if not isinstance(item.evidence, Provenance) or item.evidence == Provenance():
            raise MemoryValidationError(
                "evidence",
                "must be a Provenance naming a conversation, run or author",
                item.evidence,
            )
        checked.append((item, check_ledger_reason(item.reason)))
    return pairs, check_actor(actor), checked


def _known(record: MemoryRecord, supports: tuple[Provenance, ...]) -> tuple[Provenance, ...]:
    """What a corroborate builds on when the record's supports are ``supports``."""
    return evidence_of(record.model_copy(update={"supports": supports}))


class PromotesRecords(Generic[Handle]):
    """``corroborate``/``withdraw``/``promote``/``demote``/``promotions``/``ledger`` for a
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
        (record,) = await self.corroborate_all(
            scope, [Corroboration(id, evidence, reason)], actor=actor
        )
        return record

    async def corroborate_all(
        self, scope: Mapping[str, str], items: Sequence[Corroboration], *, actor: str
    ) -> list[MemoryRecord]:
        """Several corroborations in one transaction (S28); see
        :meth:`~recallstore.store.SupportsPromotion.corroborate_all`."""
        pairs, who, checked = _check_batch(scope, items, actor)
        self._check_open()
        async with self._writing() as handle:
            # Every precondition is checked before the first change: a refusal changes nothing.
            current = await self._records_of(handle, pairs, [i.record_id for i, _ in checked])
            now, results, entries = self._now(), [], []
            for item, why in checked:
                record = current[item.record_id]
                if record.status(now) != "valid":
                    raise MemoryConflictError(record.id, f"a {record.status(now)} record")
                known = evidence_of(record)
                if item.evidence not in known:
                    if len(known) >= MAX_SUPPORTS:
                        raise MemoryConflictError(
                            record.id, f"it keeps {MAX_SUPPORTS} supports, the most"
                        )
                    entry = self._entry(pairs, record, "corroborate", who, why, item.evidence)
                    record = record.model_copy(
                        update={"supports": (*known, item.evidence), "updated_at": entry.at}
                    )
                    current[record.id] = record
                    entries.append((entry, record))
                results.append(record)
            await self._land(handle, entries)
        return results

    async def withdraw(
        self,
        scope: Mapping[str, str],
        id: str,
        evidence: Provenance,
        *,
        actor: str,
        reason: str,
    ) -> MemoryRecord:
        """Take ``evidence`` back out of the record's ``supports`` (S28); see
        :meth:`~recallstore.store.SupportsPromotion.withdraw`."""
        (record,) = await self.withdraw_all(
            scope, [Corroboration(id, evidence, reason)], actor=actor
        )
        return record

    async def withdraw_all(
        self, scope: Mapping[str, str], items: Sequence[Corroboration], *, actor: str
    ) -> list[MemoryRecord]:
        """Several withdrawals in one transaction (S28); see
        :meth:`~recallstore.store.SupportsPromotion.withdraw_all`."""
        pairs, who, checked = _check_batch(scope, items, actor)
        self._check_open()
        async with self._writing() as handle:
            current = await self._records_of(handle, pairs, [i.record_id for i, _ in checked])
            results, entries = [], []
            for item, why in checked:
                record = current[item.record_id]
                if item.evidence not in record.supports:
                    raise MemoryConflictError(
                        record.id, "the evidence is not among its supports: nothing to withdraw"
                    )
                kept = tuple(p for p in record.supports if p != item.evidence)
                added = [
                    row
                    for row in await self._ledger_rows(handle, record.id)
                    if row.action == "corroborate" and row.evidence == (item.evidence,)
                ]
                before = added[-1].supports_before if added else None
                if before is not None and kept == _known(record, before):
                    kept = before  # nothing else changed since: exactly as before it
                entry = self._entry(pairs, record, "withdraw", who, why, item.evidence)
                record = record.model_copy(update={"supports": kept, "updated_at": entry.at})
                current[record.id] = record
                entries.append((entry, record))
                results.append(record)
            await self._land(handle, entries)
        return results

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
            rows = await self._ledger_rows(handle, None, pairs)
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
        return (await self._records_of(handle, scope, [id]))[id]

    async def _records_of(
        self, handle: Handle, scope: dict[str, str], ids: Sequence[str]
    ) -> dict[str, MemoryRecord]:
        wanted = sorted({i for i in ids if is_storable_id(i)})
        found = await self._fetch_records(handle, wanted) if wanted else {}
        for id in ids:
            record = found.get(id)
            if record is None or record.scope != scope:
                raise MemoryNotFoundError(id)
        return found

    def _entry(
        self,
        scope: dict[str, str],
        record: MemoryRecord,
        action: LedgerAction,
        actor: str,
        reason: str,
        evidence: Provenance,
    ) -> LedgerEntry:
        return LedgerEntry(
            id=new_record_id(),
            scope=scope,
            record_id=record.id,
            action=action,
            at=self._clock(),
            actor=actor,
            reason=reason,
            evidence=(evidence,),
            supports_before=record.supports,
        )

    async def _land(
        self, handle: Handle, entries: Sequence[tuple[LedgerEntry, MemoryRecord]]
    ) -> None:
        """Set the supports and append the rows checked in full before (one transaction)."""
        for entry, record in entries:
            await self._set_supports(handle, record.id, record.supports, entry.at)
            await self._append_ledger(handle, entry)
            await self._journal_learn(handle, entry, len(evidence_of(record)))

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

    async def _ledger_rows(
        self, handle: Handle, record_id: str | None, scope: dict[str, str] | None = None
    ) -> list[LedgerEntry]:
        """Every ledger row (of ``record_id`` only, when given; of exactly ``scope``,
        when given: a superset is fine, the caller filters), oldest first."""
        raise NotImplementedError(f"{type(self).__name__} keeps no ledger")

    async def _delete_ledger_rows(self, handle: Handle, ids: Sequence[str]) -> None:
        """Delete the ledger rows ``ids`` in the transaction ``handle``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no ledger")
