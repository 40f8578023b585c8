"""The ``"revise"`` extension's half of a backend: revisions over the storage primitives.

The rules of :mod:`recallstore.store.revise` (kit S21–S23) are checked here, once for
every backend, inside one write transaction: the records are read through it (locked
where the backend locks), every precondition is checked before anything changes, then
each record is updated with ``_update`` and the revision is kept. A backend lists
:class:`RevisesRecords` before ``BaseMemoryStore``, declares
:data:`~recallstore.store.REVISE_EXTENSION` and implements the three revision-row
primitives (a table from an append-only migration, or a dict).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from recallstore.backends._keys import IdempotencyKey, idempotency_key_of
from recallstore.backends.journal import JournalSettings, invalidate_data
from recallstore.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from recallstore.records import MemoryRecord, check_invalid_reason, format_timestamp
from recallstore.store import (
    IDEMPOTENCY_EXTENSION,
    REVISE_EXTENSION,
    MonotonicClock,
    RecordChange,
    RecordUndo,
    StoredRevision,
    is_storable_id,
    scope_matches,
)
from recallstore.values import canonical_scope, utc_moment

__all__ = [
    "RevisesRecords",
    "check_revision_id",
    "redact_revision",
    "revision_from_row",
    "revision_row",
]

Handle = TypeVar("Handle")

RevisionRow = tuple[str, str, str, str, str, str | None]
"""``(id, scope JSON, created_at, body, undo JSON, reverted_at)`` as SQL backends keep it.

The undo column holds the store's own bookkeeping of the revision: a JSON list of undo
items (rows kept before issue 36), or an object ``{"undo": [...], "targets": [...],
"redacted_body": ..., "forgotten": [...]}``; both read back (no migration needed)."""


def check_revision_id(value: object) -> str:
    """``value`` when it can be a kept revision's id; else :class:`MemoryValidationError`
    on ``revision_id`` naming the value (never a driver's error on an unbindable string)."""
    if not isinstance(value, str):
        raise MemoryValidationError(
            "revision_id", f"must be a string, got {type(value).__name__} {value!r}", value
        )
    if not value:
        raise MemoryValidationError("revision_id", "must not be empty", value)
    if not is_storable_id(value):
        raise MemoryValidationError(
            "revision_id",
            f"{value!r} holds a NUL character or a lone surrogate, which no revision id holds",
            value,
        )
    return value


def redact_revision(
    revision: StoredRevision, deleted: frozenset[str], scope: Mapping[str, str] | None
) -> StoredRevision | None:
    """``revision`` once the records ``deleted`` are gone (and, for a ``forget``, every
    record of ``scope``); None when it names none of them.

    Its body becomes its ``redacted_body`` (ids only), the newly deleted ids join
    ``forgotten``, and a revision whose scope contains the forgotten ``scope`` loses
    its scope values too: every record it named was of that scope.
    """
    named = revision.named
    whole = scope is not None and bool(scope) and scope_matches(revision.scope, scope)
    newly = [i for i in named if whole or i in deleted]
    if not whole and revision.redacted_body is None and not revision.targets:
        # A revision kept before targets were recorded: a target shows only in its body.
        newly += [i for i in sorted(deleted) if json.dumps(i) in revision.body]
    fresh = [i for i in dict.fromkeys(newly) if i not in revision.forgotten]
    if not fresh and not (whole and revision.scope):
        return None
    return replace(
        revision,
        scope={} if whole else revision.scope,
        body=revision.redacted_body or "",
        forgotten=(*revision.forgotten, *fresh),
    )


def _stamp(value: datetime | None) -> str | None:
    return None if value is None else format_timestamp(value)


def _moment(value: str | None) -> datetime | None:
    return None if value is None else utc_moment(datetime.fromisoformat(value))


def _required(value: str) -> datetime:
    moment = utc_moment(datetime.fromisoformat(value))
    assert moment is not None  # a string always parses to a moment or raises
    return moment


def revision_row(revision: StoredRevision) -> RevisionRow:
    """``revision`` as a row of text columns."""
    undo = [
        {
            "id": item.id,
            "invalid_at": _stamp(item.invalid_at),
            "invalid_reason": item.invalid_reason,
            "superseded_by": item.superseded_by,
            "updated_at": _stamp(item.updated_at),
            "revised_at": _stamp(item.revised_at),
        }
        for item in revision.undo
    ]
    kept = {
        "undo": undo,
        "targets": list(revision.targets),
        "redacted_body": revision.redacted_body,
        "forgotten": list(revision.forgotten),
    }
    return (
        revision.id,
        json.dumps(revision.scope, sort_keys=True, ensure_ascii=False),
        format_timestamp(revision.created_at),
        revision.body,
        json.dumps(kept, ensure_ascii=False),
        _stamp(revision.reverted_at),
    )


def revision_from_row(row: Sequence[Any]) -> StoredRevision:
    """The revision a :func:`revision_row` row holds."""
    kept = json.loads(row[4])
    if isinstance(kept, list):  # a row kept before issue 36
        kept = {"undo": kept}
    undo = tuple(
        RecordUndo(
            id=item["id"],
            invalid_at=_moment(item["invalid_at"]),
            invalid_reason=item["invalid_reason"],
            superseded_by=item["superseded_by"],
            updated_at=_required(item["updated_at"]),
            revised_at=_required(item["revised_at"]),
        )
        for item in kept["undo"]
    )
    return StoredRevision(
        id=row[0],
        scope=json.loads(row[1]),
        created_at=_required(row[2]),
        body=row[3],
        undo=undo,
        reverted_at=_moment(row[5]),
        targets=tuple(kept.get("targets", ())),
        redacted_body=kept.get("redacted_body"),
        forgotten=tuple(kept.get("forgotten", ())),
    )


class RevisesRecords(Generic[Handle]):
    """``revise``/``revert_revision``/``revisions`` for a ``BaseMemoryStore`` subclass."""

    _journal: JournalSettings | None
    _clock: MonotonicClock
    extensions: ClassVar[frozenset[str]]

    if TYPE_CHECKING:  # provided by BaseMemoryStore

        def _check_open(self) -> None: ...

        def _writing(self) -> AbstractAsyncContextManager[Handle]: ...

        def _reading(self) -> AbstractAsyncContextManager[Handle]: ...

        async def _fetch_records(
            self, handle: Handle, ids: Sequence[str]
        ) -> dict[str, MemoryRecord]: ...

        async def _fetch_keyed(
            self, handle: Handle, keys: Sequence[IdempotencyKey]
        ) -> dict[IdempotencyKey, MemoryRecord]: ...

        async def _update(self, handle: Handle, id: str, changes: Mapping[str, Any]) -> None: ...

        async def _journal_change(
            self, handle: Handle, scope: Mapping[str, str], data: Mapping[str, Any]
        ) -> None: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if REVISE_EXTENSION in getattr(cls, "extensions", frozenset()) and (
            cls._keep_revision is RevisesRecords._keep_revision
        ):
            raise TypeError(f"{cls.__name__} declares the 'revise' extension but no revision rows")

    async def revise(
        self,
        revision_id: str,
        scope: Mapping[str, str],
        changes: Sequence[RecordChange],
        body: str,
        *,
        redacted_body: str | None = None,
    ) -> StoredRevision:
        """Invalidate every changed record atomically and keep the revision (S21);
        ``redacted_body`` replaces ``body`` once a record it names is deleted."""
        pairs = canonical_scope(scope)
        if not pairs:
            raise MemoryValidationError("scope", "a revision needs a non-empty scope", {})
        if not changes:
            raise MemoryValidationError("changes", "a revision changes at least one record", [])
        check_revision_id(revision_id)
        if redacted_body is not None and not isinstance(redacted_body, str):
            raise MemoryValidationError("redacted_body", "must be a string or None", redacted_body)
        for change in changes:
            check_invalid_reason(change.reason)
        self._check_open()
        changed = [change.id for change in changes]
        targets = [c.superseded_by for c in changes if c.superseded_by is not None]
        async with self._writing() as handle:
            if await self._fetch_revision(handle, revision_id) is not None:
                raise MemoryConflictError(revision_id, "a revision with this id is kept already")
            ids = sorted({*changed, *targets})
            found = await self._fetch_records(handle, [i for i in ids if is_storable_id(i)])
            _check_changes(pairs, changes, found)
            undo: list[RecordUndo] = []
            for change in changes:
                before = found[change.id]
                stamp = self._clock()
                undo.append(
                    RecordUndo(
                        id=before.id,
                        invalid_at=before.invalid_at,
                        invalid_reason=before.invalid_reason,
                        superseded_by=before.superseded_by,
                        updated_at=before.updated_at,
                        revised_at=stamp,
                    )
                )
                update = {"invalid_at": stamp, "invalid_reason": change.reason, "updated_at": stamp}
                if change.superseded_by is not None:
                    update["superseded_by"] = change.superseded_by
                await self._update(handle, change.id, update)
                if self._journal is not None:
                    data = invalidate_data(
                        change.id,
                        before,
                        change.reason,
                        include_content=self._journal.include_content,
                    )
                    await self._journal_change(handle, pairs, {**data, "count": 1})
            revision = StoredRevision(
                id=revision_id,
                scope=pairs,
                created_at=undo[0].revised_at,
                body=body,
                undo=tuple(undo),
                targets=tuple(dict.fromkeys(targets)),
                redacted_body=redacted_body,
            )
            await self._keep_revision(handle, revision)
        return revision

    async def revert_revision(self, revision_id: str) -> StoredRevision:
        """Put every record ``revision_id`` changed back as it was, atomically (S22);
        records deleted since (``forgotten``) are skipped."""
        check_revision_id(revision_id)
        self._check_open()
        async with self._writing() as handle:
            revision = await self._fetch_revision(handle, revision_id)
            if revision is None:
                raise MemoryNotFoundError(revision_id)
            if revision.reverted_at is not None:
                raise MemoryConflictError(revision_id, "the revision was reverted already")
            undo = [item for item in revision.undo if item.id not in revision.forgotten]
            found = await self._fetch_records(handle, [item.id for item in undo])
            restored: list[MemoryRecord] = []
            for item in undo:
                record = found.get(item.id)
                if record is None:
                    raise MemoryConflictError(item.id, "a record the revision changed was deleted")
                if record.invalid_at != item.revised_at or record.updated_at != item.revised_at:
                    raise MemoryConflictError(item.id, "the record changed after the revision")
                if item.invalid_at is None:
                    restored.append(record)
            await self._check_keys_free(handle, restored)
            for item in undo:
                await self._update(
                    handle,
                    item.id,
                    {
                        "invalid_at": item.invalid_at,
                        "invalid_reason": item.invalid_reason,
                        "superseded_by": item.superseded_by,
                        "updated_at": item.updated_at,
                    },
                )
            reverted_at = self._clock()
            await self._mark_reverted(handle, revision_id, reverted_at)
        return replace(revision, reverted_at=reverted_at)

    async def revision(self, revision_id: str) -> StoredRevision | None:
        """The kept revision ``revision_id``, or None."""
        check_revision_id(revision_id)
        self._check_open()
        async with self._reading() as handle:
            return await self._fetch_revision(handle, revision_id)

    async def revisions(self, scope: Mapping[str, str] | None = None) -> list[StoredRevision]:
        """Kept revisions whose scope contains ``scope``, newest first."""
        self._check_open()
        pairs = canonical_scope(scope or {})
        async with self._reading() as handle:
            kept = await self._all_revisions(handle)
        chosen = [revision for revision in kept if scope_matches(revision.scope, pairs)]
        return sorted(chosen, key=lambda r: (r.created_at, r.id), reverse=True)

    async def _check_keys_free(self, handle: Handle, records: Sequence[MemoryRecord]) -> None:
        """A record made valid again may not take a key another valid record holds (S16)."""
        keyed = [record for record in records if record.idempotency_key]
        if not keyed or IDEMPOTENCY_EXTENSION not in self.extensions:
            return
        holders = await self._fetch_keyed(handle, [idempotency_key_of(r) for r in keyed])
        for record in keyed:
            holder = holders.get(idempotency_key_of(record))
            if holder is not None and holder.id != record.id:
                raise MemoryConflictError(
                    record.id,
                    f"its idempotency key {record.idempotency_key!r} is held by {holder.id} now",
                )

    # --- revision rows: what a backend implements --------------------------------------

    async def _keep_revision(self, handle: Handle, revision: StoredRevision) -> None:
        """Store a new revision in the transaction ``handle``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no revisions")

    async def _fetch_revision(self, handle: Handle, revision_id: str) -> StoredRevision | None:
        """The kept revision (locked in a write transaction where the backend locks)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no revisions")

    async def _all_revisions(self, handle: Handle) -> list[StoredRevision]:
        """Every kept revision, in any order."""
        raise NotImplementedError(f"{type(self).__name__} keeps no revisions")

    async def _mark_reverted(self, handle: Handle, revision_id: str, at: datetime) -> None:
        """Record that ``revision_id`` was reverted at ``at``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no revisions")

    async def _replace_revision(self, handle: Handle, revision: StoredRevision) -> None:
        """Overwrite the kept revision ``revision.id`` with ``revision`` (a redaction)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no revisions")

    async def _redact_revisions(
        self, handle: Handle, deleted: frozenset[str], scope: Mapping[str, str] | None
    ) -> None:
        """In the deleting transaction ``handle``: redact every kept revision that named
        a record of ``deleted`` (or, for a forget, lies in ``scope``)."""
        if REVISE_EXTENSION not in self.extensions or not (deleted or scope):
            return
        for revision in await self._all_revisions(handle):
            redacted = redact_revision(revision, deleted, scope)
            if redacted is not None:
                await self._replace_revision(handle, redacted)


def _check_changes(
    scope: dict[str, str], changes: Sequence[RecordChange], found: Mapping[str, MemoryRecord]
) -> None:
    """Every precondition of S21, before anything changes."""
    changed: dict[str, RecordChange] = {}
    for change in changes:
        record = found.get(change.id)
        if record is None or record.scope != scope:
            raise MemoryNotFoundError(change.id)
        if record.is_invalidated or change.id in changed:
            raise MemoryConflictError(change.id, "it is already invalidated")
        changed[change.id] = change
    for change in changes:
        target = change.superseded_by
        if target is None:
            continue
        successor = found.get(target)
        if successor is None or successor.scope != scope:
            raise MemoryNotFoundError(target)
        if successor.is_invalidated:
            raise MemoryConflictError(target, "the successor is already invalidated")
        # A successor the revision changes too must lead, along the revision's own
        # links and without a cycle, to a record it leaves valid.
        node, steps = target, 0
        while node in changed and steps <= len(changed):
            node, steps = changed[node].superseded_by or "", steps + 1
            if not node:
                raise MemoryConflictError(target, "the successor would not stay valid")
        if node in changed:
            raise MemoryConflictError(target, "the successors form a cycle")
