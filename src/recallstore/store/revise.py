"""The ``"revise"`` extension: invalidate several existing records as one revision, and
revert it.

The six protocol calls cannot link two records that both exist already (``supersedes``
works at write time only) nor make an invalid record valid again. Consolidation needs
both, so a store that offers them declares :data:`REVISE_EXTENSION` and these calls
(kit rules S21–S23, ``recallstore.testing.revise``):

* :meth:`SupportsRevise.revise` applies a revision atomically: every change names a
  valid record of exactly the revision's scope and invalidates it with a reason,
  optionally pointing ``superseded_by`` at another valid record of that scope that the
  revision leaves valid. Any broken precondition raises and changes nothing. The
  revision (the caller's ``body``, opaque to the store, and what each record held
  before) is kept in the same transaction.
* :meth:`SupportsRevise.revert_revision` puts every changed record back to exactly
  what it held before (``invalid_at``, ``invalid_reason``, ``superseded_by``,
  ``updated_at``) — the smallest honest "make valid again": only what a kept revision
  changed, only while each record still holds what the revision left (compare and set),
  only once, and never when an idempotency key it held was taken meanwhile.
* :meth:`SupportsRevise.revisions` and :meth:`SupportsRevise.revision` read them back.

Nothing is deleted, and no record is written: a revision changes validity only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

__all__ = [
    "REVISE_EXTENSION",
    "RecordChange",
    "RecordUndo",
    "StoredRevision",
    "SupportsRevise",
]

REVISE_EXTENSION = "revise"
"""``capabilities().extensions`` name of stores with ``revise``/``revert_revision``."""


@dataclass(frozen=True, slots=True)
class RecordChange:
    """One record a revision invalidates: why, and the record that replaces it, if any."""

    id: str
    reason: str
    superseded_by: str | None = None


@dataclass(frozen=True, slots=True)
class RecordUndo:
    """What one record held before a revision changed it, and the stamp it was given."""

    id: str
    invalid_at: datetime | None
    invalid_reason: str | None
    superseded_by: str | None
    updated_at: datetime
    revised_at: datetime


@dataclass(frozen=True, slots=True)
class StoredRevision:
    """A revision as the store keeps it: its id, scope, caller's body and undo data."""

    id: str
    scope: dict[str, str]
    created_at: datetime
    body: str
    undo: tuple[RecordUndo, ...]
    reverted_at: datetime | None = None
    targets: tuple[str, ...] = ()
    """The records its changes pointed ``superseded_by`` at (left valid in their place)."""
    redacted_body: str | None = None
    """What the reviser gave to keep instead of ``body`` once a record the revision
    names is deleted: ids and structure, never a record's text (None: nothing)."""
    forgotten: tuple[str, ...] = ()
    """Records it named (changed or targets) that ``delete``/``forget`` removed since.
    Once non-empty, ``body`` is ``redacted_body`` (or empty): the text is gone, and a
    ``forget`` of a scope containing the revision's scope empties ``scope`` too."""

    @property
    def named(self) -> tuple[str, ...]:
        """Every record it names: the changed ones, then the targets."""
        changed = [item.id for item in self.undo]
        return tuple(dict.fromkeys([*changed, *self.targets]))


@runtime_checkable
class SupportsRevise(Protocol):
    """A store with the ``"revise"`` extension (see the module)."""

    async def revise(
        self,
        revision_id: str,
        scope: Mapping[str, str],
        changes: Sequence[RecordChange],
        body: str,
        *,
        redacted_body: str | None = None,
    ) -> StoredRevision:
        """Apply ``changes`` atomically and keep the revision under ``revision_id``.

        ``body`` is kept as given until a record the revision names is deleted; then
        the store replaces it with ``redacted_body`` (ids only, no text; None: empty).

        Raises :class:`~recallstore.errors.MemoryNotFoundError` for an id that is not
        a record of exactly ``scope``, :class:`~recallstore.errors.MemoryConflictError`
        for a record already invalid, named twice, a ``superseded_by`` that is not a
        valid record of ``scope`` or is itself changed, or a ``revision_id`` already
        kept; :class:`~recallstore.errors.MemoryValidationError` for an empty scope or
        no changes. Nothing is changed when it raises.
        """
        ...

    async def revert_revision(self, revision_id: str) -> StoredRevision:
        """Restore what ``revision_id`` changed, atomically; returns it, now reverted.

        Records deleted since (``StoredRevision.forgotten``) are skipped: it restores
        what it can. Not found when no such revision is kept; a conflict when it was
        reverted already, a record it changed was changed since, or a restored
        record's idempotency key is held by another valid record. Nothing is changed
        when it raises.
        """
        ...

    async def revision(self, revision_id: str) -> StoredRevision | None:
        """The kept revision ``revision_id``, or None."""
        ...

    async def revisions(self, scope: Mapping[str, str] | None = None) -> list[StoredRevision]:
        """Kept revisions whose scope contains ``scope``, newest first."""
        ...
