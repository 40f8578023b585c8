"""The store as kit tests see it: every call passes through, and the kit's foundations are checked.

Kit tests inspect a store's state through two things: ``get`` and a listing with an
empty scope filter. When either is broken, a test about another rule would fail with
a misleading message (an S7 bug surfacing in an S6 test as a ``ValueError``). So the
store a test receives records what the test wrote and deleted, checks ``delete``
right away (S5: ``get`` answers None afterwards) and every supersede (S3: the old
record points to its successor), and lets :func:`every_record`
check that the listing holds every record the test wrote and none it deleted —
blaming the rule that is really broken.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from recallstore.records import (
    MAX_LIMIT,
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
)
from recallstore.store import Clock, MemoryStore, store_clock, utc_now
from recallstore.testing._rules import KitRuleViolation

__all__ = ["CheckedStore", "every_record", "unwrap"]


class CheckedStore:
    """A recording pass-through around the store under test (``.store`` is yours)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.closed = False
        self._written: dict[str, None] = {}
        self._deleted: set[str] = set()
        self._pending: dict[int, str] = {}
        self._call_numbers = itertools.count()
        self._cancelled: str | None = None

    def pending_calls(self) -> list[str]:
        """The store calls started but not finished yet (named when a test hangs)."""
        pending = list(self._pending.values())
        return pending or ([self._cancelled] if self._cancelled else [])

    async def _call(self, description: str, call: Any) -> Any:
        number = next(self._call_numbers)
        self._pending[number] = description
        try:
            return await call
        except asyncio.CancelledError:
            # A time limit cancels the test: keep naming the call it was stuck in.
            self._cancelled = description
            raise
        finally:
            del self._pending[number]

    @property
    def clock(self) -> Clock:
        """The store's clock (:func:`~recallstore.store.store_clock`)."""
        return store_clock(self.store)

    def capabilities(self) -> MemoryStoreCapabilities:
        """The store's own declaration."""
        return self.store.capabilities()

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """``write``, remembering the ids it returned and checking what it superseded (S3)."""
        records: list[MemoryRecord] = await self._call(
            f"write() of {len(inputs)} input(s) (S1)", self.store.write(inputs)
        )
        self._written.update(dict.fromkeys(record.id for record in records))
        for inp, record in zip(inputs, records, strict=False):
            if inp.supersedes is not None:
                await self._check_superseded(inp.supersedes, record)
        return records

    async def _check_superseded(self, target: str, successor: MemoryRecord) -> None:
        old = await self.store.get(target)
        if old is None or (old.superseded_by, old.invalid_at) != (
            successor.id,
            successor.created_at,
        ):
            raise KitRuleViolation(
                "S3",
                "write(supersedes=X) returned, but X is not invalidated by the new record",
                f"after writing {successor.id!r} with supersedes={target!r}, get({target!r}) "
                f"returned {old!r}; expected superseded_by={successor.id!r} and "
                f"invalid_at={successor.created_at!r}",
            )

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """``search``, passed through."""
        hits: list[MemoryHit] = await self._call(
            f"search(query={_short(query.query)}) (S7-S13)", self.store.search(query)
        )
        return hits

    async def get(self, id: str) -> MemoryRecord | None:
        """``get``, passed through."""
        record: MemoryRecord | None = await self._call(
            f"get({_short(id)}) (S6)", self.store.get(id)
        )
        return record

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        """``invalidate``, passed through."""
        await self._call(f"invalidate({_short(id)}) (S4)", self.store.invalidate(id, reason))

    async def delete(self, id: str) -> None:
        """``delete``, then a check that ``get`` no longer finds the record (S5)."""
        await self._call(f"delete({_short(id)}) (S5)", self.store.delete(id))
        self._deleted.add(id)
        self._written.pop(id, None)
        if await self.store.get(id) is not None:
            raise KitRuleViolation(
                "S5",
                "delete(id) returned, but get(id) still returns the record",
                f"record {id!r}; delete must remove the stored row itself",
            )

    async def forget(self, scope: Mapping[str, str]) -> int:
        """The ``"forget"`` extension; the records it took count as deleted (S17)."""
        forgotten: int = await self._call(
            f"forget({_short(repr(dict(scope)))}) (S17)",
            self.store.forget(scope),  # type: ignore[attr-defined]
        )
        gone = [record_id for record_id in self._written if await self.store.get(record_id) is None]
        for record_id in gone:
            self._written.pop(record_id)
            self._deleted.add(record_id)
        if forgotten != len(gone):
            raise KitRuleViolation(
                "S17",
                "forget(scope) must return how many records it deleted",
                f"it returned {forgotten}, and {len(gone)} record(s) the test wrote are gone",
            )
        return forgotten

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """The ``"import"`` extension, remembering the ids it was given."""
        inserted: int = await self._call(
            f"import_records() of {len(records)} record(s) (ext)",
            self.store.import_records(records),  # type: ignore[attr-defined]
        )
        self._written.update(dict.fromkeys(record.id for record in records))
        return inserted

    def __getattr__(self, name: str) -> Any:
        # Extensions the kit does not watch (export_records, ...) pass straight through.
        return getattr(self.store, name)

    async def aclose(self) -> None:
        """Close the store under test (the kit's fixture will not close it again)."""
        self.closed = True
        await self.store.__aexit__(None, None, None)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def check_listing(self, listed: Sequence[MemoryRecord]) -> None:
        """Blame the right rule when a full ``{}`` listing misses or resurrects records."""
        listed_ids = {record.id for record in listed}
        for record_id in listed_ids & self._deleted:
            raise KitRuleViolation(
                "S5",
                "a deleted record still comes back from search",
                f"record {record_id!r} was deleted by this test, yet a listing with scope={{}} "
                "returned it; delete must also remove it from what search reads",
            )
        if len(self._written) > MAX_LIMIT:
            return
        for record_id in self._written:
            if record_id in listed_ids:
                continue
            stored = await self.store.get(record_id)
            raise _missing_from_listing(record_id, stored)


def _missing_from_listing(record_id: str, stored: MemoryRecord | None) -> KitRuleViolation:
    listing = "a listing with scope={}, include_invalidated=True and include_expired=True"
    if stored is None:
        return KitRuleViolation(
            "S1",
            "write returned a record that the store does not hold",
            f"record {record_id!r} was returned by write() and never deleted, but get() "
            f"answers None and {listing} lacks it",
        )
    if stored.scope:
        return KitRuleViolation(
            "S7",
            "a listing with scope={} must return records of every scope",
            f"{listing} missed record {record_id!r} with scope {stored.scope}; the kit "
            "inspects a store's state this way, so later checks would mislead",
        )
    if stored.invalid_at is not None or stored.is_expired(utc_now()):
        return KitRuleViolation(
            "S9",
            "include_invalidated / include_expired must bring invalid and expired records back",
            f"{listing} missed invalidated or expired record {record_id!r}",
        )
    return KitRuleViolation(
        "S10", "a blank query must list every matching record", f"{listing} missed {record_id!r}"
    )


async def every_record(store: MemoryStore) -> list[MemoryRecord]:
    """Every stored record (invalidated and expired too), newest first, up to MAX_LIMIT.

    On the kit's checked store, also checks the listing against what the test wrote.
    """
    query = MemorySearchQuery(limit=MAX_LIMIT, include_invalidated=True, include_expired=True)
    records = [hit.record for hit in await store.search(query)]
    if isinstance(store, CheckedStore):
        await store.check_listing(records)
    return records


def unwrap(store: MemoryStore) -> MemoryStore:
    """The backend's own store object behind the kit's checked store."""
    return store.store if isinstance(store, CheckedStore) else store


def _short(value: str | None) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
