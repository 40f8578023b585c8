"""The ``MemoryStore`` protocol and the semantics helpers every backend shares."""

from __future__ import annotations

import copy
import os
import random
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Final, Protocol, Self, runtime_checkable

from recallstore._observed import check_observed_at, observed_at_saved
from recallstore._text import MAX_QUERY_TERMS, query_terms, tokenize
from recallstore.errors import ConfigurationError, MemoryConflictError, MemoryValidationError
from recallstore.records import (
    _FIRST_YEAR,
    _MAX_ID_CHARS,
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
)

__all__ = [
    "EXPORT_EXTENSION",
    "FORGET_EXTENSION",
    "IDEMPOTENCY_EXTENSION",
    "IMPORT_EXTENSION",
    "JOURNAL_EXTENSION",
    "MAX_QUERY_TERMS",
    "Clock",
    "MemoryStore",
    "MonotonicClock",
    "NewRecords",
    "StoreLifecycle",
    "SupportsExportRecords",
    "SupportsForget",
    "SupportsImportRecords",
    "check_import_batch",
    "check_observed_at",
    "common_scope",
    "deterministic_ids",
    "ids_from",
    "is_storable_id",
    "is_valid_record_id",
    "new_record_id",
    "new_record_ids",
    "newest_timestamp",
    "observed_at_saved",
    "query_terms",
    "record_from_input",
    "records_from_inputs",
    "records_to_import",
    "scope_matches",
    "tokenize",
    "utc_now",
]

Clock = Callable[[], datetime]
"""A source of the current UTC time; stores accept one so tests can control time."""


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


@runtime_checkable
class MemoryStore(Protocol):
    """Cross-session memory: a scoped, invalidation-first store of records.

    Every backend implements these six methods with the semantics S1–S17 pinned by
    ``recallstore.testing``, and is an async context manager that opens and closes it.
    """

    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """Write all ``inputs`` atomically (all or none); return the records in input order."""
        ...

    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """Relevance-ordered hits for ``query.query``, or a recency listing when blank."""
        ...

    async def get(self, id: str) -> MemoryRecord | None:
        """The record with ``id`` whatever its validity or expiry, or None."""
        ...

    async def invalidate(self, id: str, reason: str | None = None) -> None:
        """Mark a record invalid; a no-op when it already is. Missing → not found."""
        ...

    async def delete(self, id: str) -> None:
        """Forget a record completely, with its index entries. Missing → no error."""
        ...

    def capabilities(self) -> MemoryStoreCapabilities:
        """What this backend offers: search mode, durability, extensions."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class StoreLifecycle:
    """``async with store:`` opens a store and closes it; a backend supplies both halves."""

    async def open(self) -> None:
        """Make the store usable; a no-op when it already is."""

    async def aclose(self) -> None:
        """Release the store's resources; later calls raise StoreUnavailableError."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def scope_matches(record_scope: Mapping[str, str], scope_filter: Mapping[str, str]) -> bool:
    """Subset match (S7): the record's scope holds every (key, value) pair of the filter."""
    return all(record_scope.get(key) == value for key, value in scope_filter.items())


def is_storable_id(record_id: str) -> bool:
    """False for a string no stored record can have as its id (NUL, a lone surrogate).

    SQL backends cannot even bind such a string, so they answer "absent" without asking.
    """
    if "\x00" in record_id:
        return False
    try:
        record_id.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_RECORD_ID = re.compile(rf"[A-Za-z0-9_-]{{1,{_MAX_ID_CHARS}}}")


def is_valid_record_id(record_id: str) -> bool:
    """True for an id a store may be given on import: 1–128 ASCII letters, digits, ``-``, ``_``.

    Every id :func:`new_record_id` makes passes, and every passing id is one URL path
    segment as it is (no ``/``, ``%``, ``.`` or ``..``), so the dashboard can open it.
    """
    return _RECORD_ID.fullmatch(record_id) is not None


_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_RANDOM_BITS = 80
_id_lock = threading.Lock()
_last_id_ms = 0
_last_id_random = 0


_CROCKFORD_PAIRS: Final = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)
"""Every two-character string, by the 10 bits it encodes."""
_TEN_BITS: Final = 1023
_LOW_BITS: Final = (1 << 20) - 1
_RANDOM_MASK: Final = (1 << _RANDOM_BITS) - 1


def _encode_id(time_part: int, random_part: int) -> str:
    """26 lower-case Crockford base32 characters: 48 bits of time, then 80 random bits."""
    value = (time_part << _RANDOM_BITS) | (random_part & _RANDOM_MASK)
    # 13 table look-ups of 10 bits each (the top two bits are zero): base64.b32encode
    # is a Python loop in 3.11 and was a fifth of a batch write's Python time.
    pairs = _CROCKFORD_PAIRS
    return "".join(
        [
            pairs[(value >> 120) & _TEN_BITS],
            pairs[(value >> 110) & _TEN_BITS],
            pairs[(value >> 100) & _TEN_BITS],
            pairs[(value >> 90) & _TEN_BITS],
            pairs[(value >> 80) & _TEN_BITS],
            pairs[(value >> 70) & _TEN_BITS],
            pairs[(value >> 60) & _TEN_BITS],
            pairs[(value >> 50) & _TEN_BITS],
            pairs[(value >> 40) & _TEN_BITS],
            pairs[(value >> 30) & _TEN_BITS],
            pairs[(value >> 20) & _TEN_BITS],
            pairs[(value >> 10) & _TEN_BITS],
            pairs[value & _TEN_BITS],
        ]
    )


def new_record_id() -> str:
    """A unique, URL-safe, time-ordered id (ULID layout, lower-case Crockford base32).

    Within one process ids are strictly increasing, so "id desc" is a stable recency
    tie-break.
    """
    return new_record_ids(1)[0]


def new_record_ids(count: int) -> list[str]:
    """``count`` successive :func:`new_record_id` ids, with one look at the clock."""
    global _last_id_ms, _last_id_random
    if count <= 0:
        return []
    with _id_lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms <= _last_id_ms:
            now_ms = _last_id_ms
            _last_id_random += 1
        else:
            _last_id_random = int.from_bytes(os.urandom(10), "big") >> 1
        first = _last_id_random
        _last_id_random += count - 1
        _last_id_ms = now_ms
    low = first & _LOW_BITS
    if low + count > _LOW_BITS + 1 or first + count > _RANDOM_MASK:
        return [_encode_id(now_ms, first + offset) for offset in range(count)]
    # The ids differ only in their last 20 bits, the last four characters: encode the
    # rest once (the whole encoding per id was a tenth of a batch write's Python time).
    head, pairs = _encode_id(now_ms, first)[:-4], _CROCKFORD_PAIRS
    return [head + pairs[bits >> 10] + pairs[bits & _TEN_BITS] for bits in range(low, low + count)]


def ids_from(source: Callable[[], str], count: int) -> list[str]:
    """``count`` new ids from ``source`` (a store's ``ids=``), each held to
    :func:`is_valid_record_id`: :func:`new_record_ids` for the default source."""
    if source is new_record_id:
        return new_record_ids(count)
    ids = [source() for _ in range(count)]
    # The rule imported ids meet too, so every id opens in the dashboard and the CLI.
    if bad := [i for i in ids if not isinstance(i, str) or not is_valid_record_id(i)]:
        raise ConfigurationError(
            f"the store's ids source returned an unusable id: {bad[0]!r} "
            "(ids are 1 to 128 ASCII letters, digits, '-' or '_')"
        )
    return ids


def deterministic_ids(seed: int = 0) -> Callable[[], str]:
    """A seeded source of record ids, for tests and examples that pin ids in snapshots.

    Pass it to a store beside a fixed clock: ``SqliteMemoryStore(path, ids=deterministic_ids())``.
    The same seed gives the same sequence in every run. Ids have :func:`new_record_id`'s
    layout (26 URL-safe characters) and each one sorts after the one before, so "id
    desc" stays a recency tie-break; the time part is a call counter, not the time.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"deterministic_ids seed must be an int, got {seed!r}")
    draw = random.Random(seed).getrandbits
    lock = threading.Lock()
    issued = 0

    def next_id() -> str:
        nonlocal issued
        with lock:
            issued += 1
            return _encode_id(issued, draw(_RANDOM_BITS))

    return next_id


_ONE_MICROSECOND: Final = timedelta(microseconds=1)


class MonotonicClock:
    """Wraps a clock so successive readings strictly increase (by at least 1 µs).

    Stores stamp ``created_at`` from it, so recency order is total within a process
    even when the wall clock stalls or steps back.
    """

    def __init__(self, clock: Clock = utc_now) -> None:
        self._clock = clock
        self._last: datetime | None = None
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        """The next timestamp, never equal to or before the previous one."""
        return self.readings(1)[0]

    def readings(self, count: int) -> list[datetime]:
        """``count`` successive timestamps from one reading of the clock, 1 µs apart
        (what ``count`` calls in a row give when the clock stands still)."""
        if count <= 0:
            return []
        with self._lock:
            now = self._clock().astimezone(UTC)
            if self._last is not None and now <= self._last:
                now = self._last + _ONE_MICROSECOND
            stamps = [now + offset * _ONE_MICROSECOND for offset in range(count)]
            self._last = stamps[-1]
            return stamps

    def observe(self, moment: datetime | None) -> None:
        """Never hand out a time at or before ``moment`` (e.g. the newest stored record)."""
        if moment is None:
            return
        with self._lock:
            if self._last is None or moment > self._last:
                self._last = moment


def record_from_input(inp: MemoryWriteInput, *, record_id: str, now: datetime) -> MemoryRecord:
    """The record a backend stores for ``inp``: created and updated at ``now`` (S2).

    ``inp`` was validated when it was made, so with a storable id and a UTC ``now``
    the record is assembled without validating the same fields again (that second
    pass was a third of a batch write's time); anything else takes the validating path.
    """
    check_observed_at(inp.observed_at, now)
    if now.tzinfo is UTC and now.year >= _FIRST_YEAR and is_valid_record_id(record_id):
        return _assembled(inp, record_id, now)
    # Not what a store hands in: the validating path, which normalises or refuses.
    dumped = inp.model_dump(exclude={"supersedes"})
    dumped["observed_at"] = observed_at_saved(inp.observed_at, now)
    return MemoryRecord.model_validate(
        {**dumped, "id": record_id, "created_at": now, "updated_at": now}
    )


def records_from_inputs(
    inputs: Sequence[MemoryWriteInput], ids: Sequence[str], stamps: Sequence[datetime]
) -> list[MemoryRecord]:
    """:func:`record_from_input` for each input, with the id and the stamp at its
    position (what :func:`ids_from` and :meth:`MonotonicClock.readings` give a batch)."""
    return NewRecords(inputs, ids, stamps).records()


class NewRecords:
    """The records a write creates, before they are built: the inputs, an id and a
    stamp each. :meth:`records` builds them, once.

    A backend can store the batch from these three (``ids`` and ``stamps`` hold what
    the records will) and build the records it returns while its commit waits on the
    disk. With a storable id and a UTC stamp each (what a store's id source and clock
    give) building cannot fail; anything else is built, and validated, at once. The
    inputs are read twice, for the rows and for the records, so they must not be
    changed in place (a scope dict, a payload) until the write returns.
    """

    __slots__ = ("_records", "ids", "inputs", "stamps")

    def __init__(
        self, inputs: Sequence[MemoryWriteInput], ids: Sequence[str], stamps: Sequence[datetime]
    ) -> None:
        if not len(inputs) == len(ids) == len(stamps):
            raise ValueError(
                f"a batch of new records needs an id and a stamp per input: {len(inputs)} "
                f"inputs, {len(ids)} ids, {len(stamps)} stamps"
            )
        self.inputs = inputs
        self._records: list[MemoryRecord] | None = None
        if all(now.tzinfo is UTC and now.year >= _FIRST_YEAR for now in stamps) and all(
            map(is_valid_record_id, ids)
        ):
            self.ids, self.stamps = ids, stamps
            return
        built = [
            record_from_input(inp, record_id=record_id, now=now)
            for inp, record_id, now in zip(inputs, ids, stamps, strict=True)
        ]
        self._records = built
        self.ids = [record.id for record in built]
        self.stamps = [record.created_at for record in built]

    @property
    def built(self) -> bool:
        """Whether :meth:`records` has nothing left to build."""
        return self._records is not None

    def records(self) -> list[MemoryRecord]:
        """The records, built on the first call."""
        if self._records is None:
            self._records = [
                _assembled(*given) for given in zip(self.inputs, self.ids, self.stamps, strict=True)
            ]
        return self._records


def _assembled(inp: MemoryWriteInput, record_id: str, now: datetime) -> MemoryRecord:
    """The record for ``inp`` built from its validated fields, with a valid id and a
    UTC ``now`` (checked by the callers)."""
    given = inp.__dict__
    payload = given["payload"]
    # One dict literal in the model's field order (what model_construct builds, without
    # its per-field loop). Frozen models, but scope and a dict or list payload are
    # mutable containers: the record gets its own.
    fields = {
        "scope": dict(given["scope"]),
        "kind": given["kind"],
        "content": given["content"],
        "tags": given["tags"],
        "provenance": given["provenance"],
        "expires_at": given["expires_at"],
        "target": given["target"],
        "payload": payload
        if payload is None or not isinstance(payload, dict | list)
        else copy.deepcopy(payload),
        "supports": given["supports"],
        "idempotency_key": given["idempotency_key"],
        "id": record_id,
        "created_at": now,
        "updated_at": now,
        "invalid_at": None,
        "invalid_reason": None,
        "superseded_by": None,
        "observed_at": observed_at_saved(given["observed_at"], now),
    }
    record = MemoryRecord.__new__(MemoryRecord)
    _set = object.__setattr__
    _set(record, "__dict__", fields)
    _set(record, "__pydantic_fields_set__", set(_FIELDS_SET))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


_FIELDS_SET: Final = frozenset(MemoryRecord.model_fields) - {
    "invalid_at",
    "invalid_reason",
    "superseded_by",
}
"""The fields a validated new record was given (its ``model_fields_set``)."""


IMPORT_EXTENSION = "import"
"""``capabilities().extensions`` name of stores with ``import_records`` (exact inserts)."""
EXPORT_EXTENSION = "export"
"""``capabilities().extensions`` name of stores with ``export_records`` (full streaming)."""
IDEMPOTENCY_EXTENSION = "idempotency"
"""``capabilities().extensions`` name of stores that take ``idempotency_key`` (S16)."""
JOURNAL_EXTENSION = "journal"
"""``capabilities().extensions`` name of stores that keep a durable, tailable event
journal (see ``recallstore.backends.journal``)."""
FORGET_EXTENSION = "forget"
"""``capabilities().extensions`` name of stores with ``forget(scope)``: the administrative
erasure of every record of a scope (never offered to a model)."""


def common_scope(scopes: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """The (key, value) pairs every scope shares; {} for none."""
    shared: dict[str, str] | None = None
    for scope in scopes:
        if shared is None:
            shared = dict(scope)
        else:
            shared = {key: value for key, value in shared.items() if scope.get(key) == value}
    return dict(sorted((shared or {}).items()))


@runtime_checkable
class SupportsImportRecords(Protocol):
    """A store with the ``"import"`` extension: exact inserts for lossless restores."""

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """Insert ``records`` unchanged (ids, timestamps, chains), atomically.

        An identical record already stored is skipped; a different record under an
        existing id raises :class:`~recallstore.errors.MemoryConflictError` and writes
        nothing. Returns how many were inserted.
        """
        ...


@runtime_checkable
class SupportsExportRecords(Protocol):
    """A store with the ``"export"`` extension: every record, streamed oldest first."""

    def export_records(self, scope: Mapping[str, str] | None = None) -> AsyncIterator[MemoryRecord]:
        """Every record whose scope contains ``scope`` (invalid and expired included),
        ordered by ``(created_at, id)``."""
        ...


@runtime_checkable
class SupportsForget(Protocol):
    """A store with the ``"forget"`` extension: erase every record of a scope at once."""

    async def forget(self, scope: Mapping[str, str]) -> int:
        """Delete, in one transaction, every record whose scope contains ``scope`` (S17);
        returns how many. An empty scope raises
        :class:`~recallstore.errors.MemoryValidationError` and deletes nothing."""
        ...


def check_import_batch(records: Sequence[MemoryRecord]) -> None:
    """Refuse an import batch that no store could hold consistently (before any I/O).

    An id (or ``superseded_by``) that :func:`is_valid_record_id` refuses, duplicate ids,
    a superseded record without ``invalid_at`` and ``updated_at`` before ``created_at``
    raise :class:`MemoryValidationError` naming ``records[i]``.
    """
    seen: set[str] = set()
    for index, record in enumerate(records):
        for field, value in (("id", record.id), ("superseded_by", record.superseded_by)):
            if value is not None and not is_valid_record_id(value):
                raise MemoryValidationError(
                    f"records[{index}].{field}",
                    f"{value!r} is not a record id: ids are 1 to {_MAX_ID_CHARS} ASCII letters, "
                    "digits, '-' or '_' (like the ids stores generate), so they fit in a URL",
                    value,
                )
        if record.id in seen:
            raise MemoryValidationError(
                f"records[{index}].id", "duplicate id in the batch", record.id
            )
        seen.add(record.id)
        if record.superseded_by is not None and record.invalid_at is None:
            raise MemoryValidationError(
                f"records[{index}].invalid_at", "a superseded record must have invalid_at"
            )
        if record.updated_at < record.created_at:
            raise MemoryValidationError(
                f"records[{index}].updated_at", "updated_at is before created_at", record.updated_at
            )


def records_to_import(
    records: Sequence[MemoryRecord], stored: Mapping[str, MemoryRecord]
) -> list[MemoryRecord]:
    """The records of an import batch that are not stored yet, in batch order.

    ``stored`` maps the batch's ids that the store already holds to the stored record:
    an identical one is skipped, a different one raises :class:`MemoryConflictError`.
    """
    fresh = []
    for record in records:
        existing = stored.get(record.id)
        if existing is None:
            fresh.append(record)
        elif existing != record:
            raise MemoryConflictError(record.id, "a different record with this id already exists")
    return fresh


def newest_timestamp(records: Sequence[MemoryRecord]) -> datetime | None:
    """The latest created/updated/invalid time in ``records``, for ``MonotonicClock.observe``."""
    moments = [
        moment
        for record in records
        for moment in (record.created_at, record.updated_at, record.invalid_at)
        if moment is not None
    ]
    return max(moments, default=None)
