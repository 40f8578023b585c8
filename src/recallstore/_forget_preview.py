"""What ``forget(scope)`` would take, computed before anything goes: one place for the
memory lens's confirmation and ``recallstore forget``'s.

:func:`preview_forget` reads the store (records, kept revisions, journal) and applies
the very rules the forget applies in its transaction — the records whose scope
contains the pairs, every status; the kept revisions ``redact_revision`` would
redact; the journal rows ``scrub_envelope`` would erase or scrub — so what the
operator confirms is what happens. It changes nothing and publishes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from recallstore.backends._forget_traces import provenance_of, scrub_envelope
from recallstore.backends._revise_extension import redact_revision
from recallstore.backends.journal import SupportsJournal
from recallstore.errors import MemoryValidationError
from recallstore.jsonl import iter_records
from recallstore.records import MEMORY_KINDS
from recallstore.store import (
    FORGET_EXTENSION,
    JOURNAL_EXTENSION,
    REVISE_EXTENSION,
    MemoryStore,
    SupportsRevise,
)
from recallstore.values import canonical_scope

__all__ = ["ForgetPreview", "preview_forget"]

_JOURNAL_PAGE = 1000


@dataclass(frozen=True)
class ForgetPreview:
    """What forgetting ``scope`` would take (see the module)."""

    scope: dict[str, str]
    """The canonical scope: records whose scope contains every pair go."""
    record_ids: tuple[str, ...]
    """Every record that would be deleted (valid, invalidated, superseded, expired)."""
    by_kind: dict[str, int]
    """How many of them of each kind, in :data:`~recallstore.records.MEMORY_KINDS` order."""
    plans: tuple[str, ...] = ()
    """Kept revisions (consolidation plans) that would keep ids only."""
    journal_erased: int | None = None
    """Journal entries that would be erased (their scope lies in ``scope``); None when
    the store keeps no journal."""
    journal_scrubbed: int | None = None
    """Other journal entries that would lose text, conversation or run ids."""
    can_forget: bool = True
    """False when the store lacks the ``"forget"`` extension."""
    keeps_plans: bool = field(default=False)
    """True when the store keeps consolidation plans (the ``"revise"`` extension)."""

    @property
    def total(self) -> int:
        """Records that would go."""
        return len(self.record_ids)

    @property
    def touches_anything(self) -> bool:
        """True when a forget would change something: a record, a plan or an event."""
        return bool(self.record_ids or self.plans or self.journal_erased or self.journal_scrubbed)

    def describe(self) -> list[str]:
        """The preview in plain lines, as ``recallstore forget`` prints it."""
        kinds = ", ".join(f"{count} {kind}" for kind, count in self.by_kind.items())
        noun = "record" if self.total == 1 else "records"
        lines = [f"{self.total} {noun}" + (f" ({kinds})" if kinds else "")]
        if self.keeps_plans:
            lines.append(
                f"{len(self.plans)} consolidation plan(s) keep ids only"
                + (f": {', '.join(self.plans)}" if self.plans else "")
            )
        if self.journal_erased is not None:
            lines.append(
                f"{self.journal_erased} journal entr{'y' if self.journal_erased == 1 else 'ies'}"
                f" erased, {self.journal_scrubbed} scrubbed of their text and conversation ids"
            )
        return lines


async def preview_forget(store: MemoryStore, scope: Mapping[str, str]) -> ForgetPreview:
    """What ``forget(scope)`` would take from ``store``; changes nothing.

    ``scope`` must hold at least one pair, as for ``forget`` itself
    (:class:`~recallstore.errors.MemoryValidationError` on ``scope`` otherwise, raised
    by the caller's scope parsing or here).
    """
    pairs = canonical_scope(scope)
    if not pairs:
        raise MemoryValidationError(
            "scope", "forget needs at least one key=value pair", dict(scope)
        )
    extensions = store.capabilities().extensions
    records = [record async for record in iter_records(store, pairs)]
    ids = frozenset(record.id for record in records)
    counts = Counter(record.kind for record in records)
    by_kind: dict[str, int] = {kind: counts[kind] for kind in MEMORY_KINDS if counts[kind]}
    plans: list[str] = []
    keeps_plans = REVISE_EXTENSION in extensions and isinstance(store, SupportsRevise)
    if keeps_plans:
        for revision in await cast(SupportsRevise, store).revisions(None):
            if redact_revision(revision, ids, pairs) is not None:
                plans.append(revision.id)
    erased: int | None = None
    scrubbed: int | None = None
    if JOURNAL_EXTENSION in extensions and isinstance(store, SupportsJournal):
        provenance = frozenset().union(*(provenance_of(record) for record in records))
        erased, scrubbed = await _journal_touched(store, ids, provenance, pairs)
    return ForgetPreview(
        scope=pairs,
        record_ids=tuple(record.id for record in records),
        by_kind=by_kind,
        plans=tuple(plans),
        journal_erased=erased,
        journal_scrubbed=scrubbed,
        can_forget=FORGET_EXTENSION in extensions,
        keeps_plans=keeps_plans,
    )


async def _journal_touched(
    journal: SupportsJournal,
    ids: frozenset[str],
    provenance: frozenset[str],
    scope: dict[str, str],
) -> tuple[int, int]:
    """Journal entries the forget would erase, and those it would scrub."""
    erased = scrubbed = 0
    after = 0
    while True:
        entries = await journal.read_journal(after=after, limit=_JOURNAL_PAGE)
        for entry in entries:
            result = scrub_envelope(entry.envelope, ids, provenance, scope)
            if result is None:
                erased += 1
            elif isinstance(result, dict):
                scrubbed += 1
        if len(entries) < _JOURNAL_PAGE:
            return erased, scrubbed
        after = entries[-1].id
