"""Record ids: how stores make them (time-ordered, URL-safe) and which ids they accept;
and the id a store names itself by (:func:`store_id_from`)."""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Final

from recallstore.errors import ConfigurationError, MemoryValidationError
from recallstore.values import RECORD_ID_RULE, is_storable, is_valid_record_id


def check_record_id(record_id: object) -> str:
    """``record_id`` when it is a string; else :class:`MemoryValidationError` on ``id``
    (S14). What ``get``, ``delete`` and ``invalidate`` check first: a list or None from
    a caller's bug is a validation error, not a TypeError deep inside a backend."""
    if not isinstance(record_id, str):
        raise MemoryValidationError(
            "id", f"must be a string, got {type(record_id).__name__}", record_id
        )
    return record_id


def is_storable_id(record_id: str) -> bool:
    """False for a string no stored record can have as its id (NUL, a lone surrogate);
    :class:`MemoryValidationError` on ``id`` for what is not a string at all
    (:func:`check_record_id`).

    SQL backends cannot even bind such a string, so they answer "absent" without asking.
    """
    return is_storable(check_record_id(record_id))


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
    # is a Python loop in 3.11 (its cost: docs/benchmarks.md, "Measured choices").
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
    # rest once instead of the whole id per record.
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
            f"the store's ids source returned an unusable id: {bad[0]!r} ({RECORD_ID_RULE})"
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


def store_id_from(origin: str) -> str:
    """A store's id (``gen_ai.memory.store.id``): 32 hex digits of SHA-256 over
    ``origin``, what makes the store itself and no other (a durable store: the instant
    its schema was first created, kept in its own database; see docs/observability.md).

    The same store gives the same id in every process and after every restart; a copy
    of its file is the same store. The id is a hash of an instant, so it carries no
    path, URL, credential or memory content.
    """
    return hashlib.sha256(f"recallstore store\0{origin}".encode()).hexdigest()[:32]
