"""``ScopedMemory``: a store seen through one scope, the only store access a memory tool gets.

Every memory tool's ``run`` receives a :class:`ScopedMemory` instead of the store, so
scope safety does not depend on each tool getting it right: writes are stamped with the
scope and provenance, reads are filtered by the scope, and an id outside the scope is
answered exactly like an id that does not exist. Mistakes a model can make come back as
:class:`~recallstore.tools.ToolFailure` (a structured result); store failures raise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from recallstore._dedupe import equal_valid_record, keyed_by_content
from recallstore._search.floor import above_floor
from recallstore.context import DUPLICATE_CHECK, CallContext, call_context
from recallstore.errors import (
    ConfigurationError,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from recallstore.records import (
    DEFAULT_LIMIT,
    MemoryHit,
    MemoryKind,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    Provenance,
    check_invalid_reason,
)
from recallstore.store import (
    PROMOTE_EXTENSION,
    Clock,
    MemoryStore,
    SupportsPromotion,
    conversations_of,
    scope_matches,
    store_clock,
)
from recallstore.tools import ToolFailure
from recallstore.values import canonical_scope

__all__ = ["ScopedMemory"]


def _not_found(record_id: str, field: str) -> ToolFailure:
    # One message for "missing" and "outside your scope": the model learns nothing more.
    return ToolFailure(
        "not_found",
        f"No memory with id {record_id!r} exists in this memory. "
        "Use memory_search or memory_list to find the right id.",
        [field],
    )


class ScopedMemory:
    """One conversation's memory: ``store`` bound to ``scope``, stamped with provenance.

    ``scope`` must be non-empty (:class:`~recallstore.errors.ConfigurationError`
    otherwise): unscoped memory would let a model read every user's memories. There is
    no way to reach the store or another scope through it. ``handles`` maps the short
    names of this conversation's recall block (``m1``, see
    :attr:`~recallstore.recall.Recall.handles`) to record ids: every method taking an
    id accepts one; any other id is used as it is, and is still checked against the
    scope.
    """

    def __init__(
        self,
        store: MemoryStore,
        scope: Mapping[str, str],
        *,
        conversation_id: str | None = None,
        run_id: str | None = None,
        author: str | None = None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
        handles: Mapping[str, str] | None = None,
    ) -> None:
        if not scope:
            raise ConfigurationError(
                "memory tools need a non-empty scope (e.g. {'user': 'u_42'}); "
                "an unscoped toolbox would expose every user's memories"
            )
        # Validates and canonicalises the scope once, at the edge.
        self._scope: dict[str, str] = canonical_scope(scope)
        self._provenance = Provenance(conversation_id=conversation_id, run_id=run_id, author=author)
        self._store = store
        self._zone = _zone(time_zone)
        self._clock = clock or store_clock(store)
        self._handles = dict(handles or {})

    @property
    def time_zone(self) -> tzinfo | None:
        """The user's time zone, which "yesterday" and "last week" are read in (None: UTC)."""
        return self._zone

    def now(self) -> datetime:
        """The conversation's clock (the store's unless one was given), which relative
        time phrases are read against."""
        return self._clock()

    @property
    def scope(self) -> dict[str, str]:
        """The scope every read and write is bound to (a copy: it cannot be changed)."""
        return dict(self._scope)

    @property
    def provenance(self) -> Provenance:
        """The provenance every save is stamped with."""
        return self._provenance

    def _context(self, purpose: str | None = None) -> AbstractContextManager[CallContext]:
        return call_context(
            conversation_id=self._provenance.conversation_id,
            run_id=self._provenance.run_id,
            purpose=purpose,
        )

    async def _corroborated(self, equal: MemoryRecord) -> MemoryRecord:
        """``equal`` with this conversation's provenance among its supports, when the
        store has the ``"promote"`` extension and this conversation is not yet behind
        it (issue 39: the same lesson from another conversation is evidence, not a
        copy); else ``equal`` unchanged. Corroboration is evidence only: nothing here
        promotes."""
        conversation = self._provenance.conversation_id
        store = self._store
        if (
            conversation is None
            or conversation in conversations_of(equal)
            or PROMOTE_EXTENSION not in store.capabilities().extensions
            or not isinstance(store, SupportsPromotion)
        ):
            return equal
        try:
            with self._context():
                return await store.corroborate(
                    self._scope,
                    equal.id,
                    self._provenance,
                    actor="tool:memory_save",
                    reason="the same statement was saved again in another conversation",
                )
        except (MemoryConflictError, MemoryNotFoundError):
            return equal  # invalidated or deleted since the check: it stays as it was

    def resolve(self, record_id: str) -> str:
        """The record id a recall handle (``m1``) of this conversation names, else
        ``record_id`` itself."""
        return self._handles.get(record_id, record_id)

    async def get(self, record_id: str, *, field: str = "id") -> MemoryRecord:
        """The record ``record_id`` (or recall handle) names (valid or not) if it is in
        the scope.

        Otherwise a ``not_found`` :class:`~recallstore.tools.ToolFailure` naming the
        argument ``field``, the same whether the record is missing or someone else's.
        """
        with self._context():
            record = await self._store.get(self.resolve(record_id))
        if record is None or not scope_matches(record.scope, self._scope):
            raise _not_found(record_id, field)
        return record

    async def save(
        self,
        content: str,
        *,
        kind: MemoryKind = "fact",
        tags: Iterable[str] = (),
        supersedes: str | None = None,
    ) -> MemoryRecord:
        """Save a memory in the scope, optionally superseding one of the scope's valid memories.

        A plain save (no ``supersedes``) of content equal to a valid memory of exactly
        this scope (:mod:`recallstore.sameness`) returns that memory and writes nothing;
        :meth:`remember` also says which happened. Model mistakes (bad content or tags,
        a ``supersedes`` id that is not found or no longer valid) raise
        :class:`~recallstore.tools.ToolFailure`.
        """
        record, _ = await self.remember(content, kind=kind, tags=tags, supersedes=supersedes)
        return record

    async def remember(
        self,
        content: str,
        *,
        kind: MemoryKind = "fact",
        tags: Iterable[str] = (),
        supersedes: str | None = None,
    ) -> tuple[MemoryRecord, bool]:
        """:meth:`save`, returning ``(record, already)``: ``already`` is True when an equal
        valid memory of this exact scope was returned instead of a new one."""
        if supersedes is not None:
            supersedes = self.resolve(supersedes)
            old = await self.get(supersedes, field="supersedes")
            if old.is_invalidated:
                raise ToolFailure(
                    "conflict",
                    f"Memory {old.id!r} is no longer valid, so it cannot be superseded; "
                    "search for the memory that replaced it.",
                    ["supersedes"],
                )
        try:
            entry = MemoryWriteInput(
                scope=self._scope,
                kind=kind,
                content=content,
                tags=tuple(tags),
                provenance=self._provenance,
                supersedes=supersedes,
            )
        except MemoryValidationError as exc:
            raise ToolFailure("invalid_arguments", str(exc), [exc.field]) from None
        if supersedes is None:
            with self._context(DUPLICATE_CHECK):
                equal = await equal_valid_record(self._store, entry.scope, entry.content)
            if equal is not None:
                return await self._corroborated(equal), True
            entry = keyed_by_content(self._store, entry)
        try:
            with self._context():
                (record,) = await self._store.write([entry])
        except MemoryNotFoundError:
            # Deleted between the check and the write: still just "not found".
            raise _not_found(supersedes or "", "supersedes") from None
        except MemoryConflictError as exc:
            raise ToolFailure(
                "conflict",
                f"Memory {exc.record_id!r} was superseded or invalidated meanwhile; "
                "search again for the current memory.",
                ["supersedes"],
            ) from None
        # The loser of two concurrent equal saves gets the winner's record back from the
        # content key (S16) and is reported as saved: the store still holds one row.
        return record, False

    async def search(
        self,
        query: str | None = None,
        *,
        kinds: Iterable[MemoryKind] | None = None,
        tags: Iterable[str] | None = None,
        limit: int = DEFAULT_LIMIT,
        include_invalidated: bool = False,
        include_expired: bool = False,
        observed_after: datetime | None = None,
        observed_before: datetime | None = None,
    ) -> list[MemoryHit]:
        """The scope's memories matching ``query`` (best first) above the relevance floor
        (``recallstore._search.floor``), or the newest without one; ``observed_after`` /
        ``observed_before`` bound when they were said (S19)."""
        try:
            search = MemorySearchQuery(
                query=query,
                scope=self._scope,
                kinds=None if kinds is None else tuple(kinds),
                tags=None if tags is None else tuple(tags),
                limit=limit,
                include_invalidated=include_invalidated,
                include_expired=include_expired,
                observed_after=observed_after,
                observed_before=observed_before,
            )
        except MemoryValidationError as exc:
            raise ToolFailure("invalid_arguments", str(exc), [exc.field]) from None
        with self._context():
            hits = await self._store.search(search)
        # The tools show what is worth reading: no tail of one-common-word matches.
        return hits if search.is_listing else above_floor(hits, lambda hit: hit.score)

    async def invalidate(self, record_id: str, reason: str | None = None) -> None:
        """Invalidate the scope's memory ``record_id`` (already invalid is fine).

        A bad ``reason`` or an id outside the scope raises
        :class:`~recallstore.tools.ToolFailure`.
        """
        try:
            check_invalid_reason(reason)
        except MemoryValidationError as exc:
            raise ToolFailure("invalid_arguments", str(exc), ["reason"]) from None
        record_id = self.resolve(record_id)
        await self.get(record_id)
        try:
            with self._context():
                await self._store.invalidate(record_id, reason)
        except MemoryNotFoundError:
            raise _not_found(record_id, "id") from None


def _zone(time_zone: str | tzinfo | None) -> tzinfo | None:
    """A zone given by IANA name (``"Europe/Berlin"``) or as a ``tzinfo``, or None."""
    if time_zone is None or isinstance(time_zone, tzinfo):
        return time_zone
    try:
        return ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigurationError(
            f"time_zone {time_zone!r} is not an IANA time zone name (e.g. 'Europe/Berlin')"
        ) from None
