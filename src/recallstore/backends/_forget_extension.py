"""The ``"forget"`` extension's half of a backend: ``forget(scope)`` over one primitive.

``forget`` is the administrative "delete everything about this user" request (S17):
one transaction deletes every record whose scope contains the given pairs, with what
``delete`` removes for each (S5). A backend lists :class:`ForgetsScopes` before
``BaseMemoryStore``, declares :data:`~recallstore.store.FORGET_EXTENSION` and
implements :meth:`ForgetsScopes._forget` (and, when its deletes owe work after the
commit, :meth:`ForgetsScopes._after_forget`). Never a model tool: the toolbox,
toolset and adapters do not expose it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from recallstore.backends._forget_traces import ErasesTraces
from recallstore.backends.journal import JournalSettings
from recallstore.errors import MemoryValidationError
from recallstore.store import FORGET_EXTENSION
from recallstore.values import canonical_scope

__all__ = ["ForgetsScopes"]

Handle = TypeVar("Handle")

Forgotten = tuple[str, str, frozenset[str]]
"""A deleted record's ``(id, kind, conversation and run ids it came from)``."""


class ForgetsScopes(ErasesTraces[Handle], Generic[Handle]):
    """``forget(scope) -> int`` for a ``BaseMemoryStore`` subclass (see the module)."""

    _journal: JournalSettings | None
    extensions: ClassVar[frozenset[str]]

    if TYPE_CHECKING:  # provided by BaseMemoryStore

        def _check_open(self) -> None: ...

        def _writing(self) -> AbstractAsyncContextManager[Handle]: ...

        async def _journal_change(
            self, handle: Handle, scope: Mapping[str, str], data: Mapping[str, Any]
        ) -> None: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if FORGET_EXTENSION in cls.extensions and cls._forget is ForgetsScopes._forget:
            raise TypeError(f"{cls.__name__} declares the 'forget' extension but no _forget()")

    async def forget(self, scope: Mapping[str, str]) -> int:
        """Delete every record whose scope contains ``scope`` — invalid, superseded and
        expired ones included — in one transaction; returns how many (S17).

        An empty scope (which would match every record) raises
        :class:`~recallstore.errors.MemoryValidationError` on ``scope`` and deletes
        nothing. Journaled as one ``delete`` write event listing every deleted id, with
        no scope (its values are what is forgotten). In the same transaction the
        records' traces go: kept revisions keep ids only, and journal rows of the
        scope or of the records' conversations and runs are erased
        (``backends._forget_traces``).
        """
        pairs = canonical_scope(scope)
        if not pairs:
            raise MemoryValidationError(
                "scope",
                "forget needs at least one key=value pair: an empty scope would match "
                "every record, and forget refuses to erase the whole store",
                dict(scope),
            )
        self._check_open()
        await self._flush_before_erasing()
        async with self._writing() as handle:
            removed = await self._forget(handle, pairs)
            provenance = frozenset().union(*(found for _, _, found in removed))
            await self._erase_traces(handle, [i for i, _, _ in removed], provenance, pairs)
            if self._journal is not None and removed:
                data = {
                    "operation": "delete",
                    "record_ids": [record_id for record_id, _, _ in removed],
                    "kinds": [kind for _, kind, _ in removed],
                    "count": len(removed),
                }
                await self._journal_change(handle, {}, data)
        # Even when no record matched: the scope's journal rows and plans may have gone.
        await self._after_forget()
        return len(removed)

    async def _flush_before_erasing(self) -> None:
        """Write buffered search and recall events first, so the erasing transaction
        sees them in the table (those queued meanwhile are scrubbed in the buffer)."""
        buffer = getattr(self, "_journal_buffer", None)
        if buffer is not None:
            await buffer.flush()

    async def _forget(self, handle: Handle, scope: Mapping[str, str]) -> Sequence[Forgotten]:
        """Delete, in the transaction ``handle``, every record whose scope contains
        ``scope`` (never empty) with its index entries; return their ``(id, kind,
        provenance)`` (:data:`Forgotten`, ``_forget_traces.provenance_values``)."""
        raise NotImplementedError(f"{type(self).__name__} does not forget scopes")

    async def _after_forget(self) -> None:
        """After the commit of a forget, or of a delete that deleted a record (a WAL
        scrub, say)."""
