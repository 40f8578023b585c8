"""Idempotency keys on PostgreSQL (S16) without a lock per key.

Two writers of one key may both find it free. The partial unique index
``memory_records_idempotency`` (one valid record per scope and key) lets one of them
insert; the other waits for its commit, fails with a unique violation, and
:class:`RetriesKeyRaces` runs its whole call again, which now sees the winner's record:
the outcome is that of the two calls one after the other, as S16 asks. A transaction
lock per key did the same, but a batch then took as many locks as it had keys, and
the server's lock table is shared by every database on it: a 13,000-message capture
exhausted it ("out of shared memory") and failed other databases' writes too (issue
36). Here a batch of any size takes the same few locks.

Holders are locked and new rows inserted in key order (:func:`in_key_order`), so two
batches sharing keys never wait for each other in a cycle; a deadlock Postgres breaks
anyway (or any transaction it rolls back for a retry) is retried like a lost race.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from recallstore.backends._keys import IdempotencyKey, idempotency_key_of
from recallstore.backends.base import BaseMemoryStore
from recallstore.backends.postgres.rows import COLUMNS, record_from
from recallstore.errors import StoreUnavailableError
from recallstore.records import MemoryRecord, MemoryWriteInput

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "KEY_INDEX",
    "RACE_ATTEMPTS",
    "RetriesKeyRaces",
    "fetch_keyed",
    "in_key_order",
    "retrying",
]

KEY_INDEX: Final = "memory_records_idempotency"
"""The partial unique index on ``(scope, idempotency_key)`` of valid records."""

RACE_ATTEMPTS: Final = 64
"""Attempts of one call before it gives up: each lost one means another call that took
one of its keys committed, so only that many racers at once exhaust them."""

T = TypeVar("T")


async def fetch_keyed(
    conn: AsyncConnection[Any], table: str, keys: Sequence[IdempotencyKey]
) -> dict[IdempotencyKey, MemoryRecord]:
    """The valid records of ``table`` holding ``keys``, locked in key order until the
    caller's transaction ends (a supersede of one waits; no lock is taken for absence)."""
    from psycopg.types.json import Jsonb

    ordered = sorted(keys)
    cursor = await conn.execute(
        f"SELECT {COLUMNS} FROM {table} AS r "
        "JOIN unnest(%s::jsonb[], %s::text[]) AS k(key_scope, key_name) "
        "ON r.scope = k.key_scope AND r.idempotency_key = k.key_name "
        "WHERE r.invalid_at IS NULL ORDER BY r.idempotency_key, r.scope FOR UPDATE OF r",
        ([Jsonb(dict(pairs)) for pairs, _ in ordered], [name for _, name in ordered]),
    )
    found: dict[IdempotencyKey, MemoryRecord] = {}
    for row in await cursor.fetchall():
        record = record_from(row)
        found[idempotency_key_of(record)] = record
    return found


def in_key_order(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """``records`` in the order their rows are inserted: by key, whole (unkeyed first,
    as given: only keyed rows can make two batches wait for each other)."""
    keyed = [record for record in records if record.idempotency_key]
    if not keyed:
        return list(records)
    unkeyed = [record for record in records if not record.idempotency_key]
    return unkeyed + sorted(keyed, key=lambda record: idempotency_key_of(record)[::-1])


class RetriesKeyRaces(BaseMemoryStore["AsyncConnection[Any]"]):
    """``write`` and ``import_records`` run again when they lose a race for a key.

    Placed after ``HybridSearch`` in the store's bases, so a batch is embedded once
    however often its transaction runs.
    """

    _target: str

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """As ``BaseMemoryStore.write``; a lost race for a key runs it again."""
        attempt = super().write
        return await retrying(lambda: attempt(inputs), self._target)

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """As ``BaseMemoryStore.import_records``; a lost race for a key or an id runs it
        again (an id: a concurrent import inserted it after our look-up, as ``FOR
        UPDATE`` cannot lock a row that does not exist yet), which then sees the winner's
        rows: identical ones are skipped, different ones conflict."""
        attempt = super().import_records
        return await retrying(lambda: attempt(records), self._target, any_unique=True)


async def retrying(call: Callable[[], Awaitable[T]], target: str, *, any_unique: bool = False) -> T:
    """``call()``, run again while it loses a race a later attempt can win: a unique
    violation of :data:`KEY_INDEX` (of any unique index with ``any_unique``) or a
    transaction Postgres rolled back (a deadlock, a serialisation failure)."""
    from psycopg.errors import TransactionRollback, UniqueViolation

    lost: Exception | None = None
    for _ in range(RACE_ATTEMPTS):
        try:
            return await call()
        except UniqueViolation as exc:
            if not any_unique and exc.diag.constraint_name != KEY_INDEX:
                raise
            lost = exc
        except StoreUnavailableError as exc:  # what _reading makes of a rollback
            if not isinstance(exc.__cause__, TransactionRollback):
                raise
            lost = exc
    raise StoreUnavailableError(
        target,
        f"other writers took the same idempotency keys {RACE_ATTEMPTS} times in a row "
        f"(last: {str(lost).strip()})",
    )
