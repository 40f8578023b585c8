"""How the SQLite backend lays a record out in ``memory_records`` and its side tables."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Final, TypeVar

import aiosqlite
from pydantic import BaseModel

from recallstore.backends._keys import IdempotencyKey
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemoryTarget,
    Provenance,
    format_timestamp,
)

_T = TypeVar("_T")
_Statements = list[tuple[str, list[tuple[Any, ...]]]]
"""SQL statements for ``executemany``, each with its rows."""

__all__ = [
    "COLUMNS",
    "COLUMN_NAMES",
    "RECORD_COLUMNS",
    "PendingInsert",
    "execute_many",
    "execute_now",
    "fetchone",
    "fetchone_now",
    "insert_now",
    "json_text",
    "listing_hits",
    "next_seq",
    "on_thread",
    "recency_key",
    "record_from_row",
    "rows_by_id",
    "rows_by_key",
    "run",
    "scope_terms",
    "scope_token",
]

COLUMNS: Final = (
    "id, kind, content, scope, tags, provenance, target, payload, supports, "
    "created_at, updated_at, invalid_at, invalid_reason, superseded_by, expires_at, "
    "idempotency_key"
)
"""The record's columns, in the order rows are read and written."""
COLUMN_NAMES: Final = tuple(name.strip() for name in COLUMNS.split(","))
RECORD_COLUMNS: Final = ", ".join(f"r.{name}" for name in COLUMN_NAMES)
"""The same columns of ``memory_records AS r``, for queries that join other tables."""
_JSON_COLUMNS: Final = frozenset({"scope", "tags", "provenance", "target", "payload", "supports"})


def execute_many(db: sqlite3.Connection, statements: _Statements) -> None:
    """Run statements with their rows on the connection's thread."""
    for sql, rows in statements:
        db.executemany(sql, rows)


class PendingInsert:
    """The rows that store a batch of records, built before its transaction runs.

    Each record's ``seq`` is assigned in the transaction (:meth:`statements`), so the
    scope, tag and FTS rows name it directly: no look-up by id per side row, and no
    trigger (schema version 5) tokenising a JSON scope per record. Everything but the
    ``seq`` is built here, on the event loop; :meth:`statements` only numbers the rows,
    in one pass over the batch.
    """

    __slots__ = ("count", "records", "sides")

    def __init__(self, records: Sequence[MemoryRecord]) -> None:
        self.count = len(records)
        self.records: list[tuple[Any, ...]] = []
        # Per record: its scope pairs, recency key, content, scope terms and tags.
        self.sides: list[tuple[tuple[tuple[str, str], ...], int, str, str, Sequence[str]]] = []
        for record in records:
            created_at = record.created_at
            pairs = tuple(record.scope.items())
            scope_json, terms = _scope_texts(pairs)
            self.records.append(_record_row(record, scope_json))
            self.sides.append(
                (pairs, (created_at - _EPOCH) // _MICROSECOND, record.content, terms, record.tags)
            )

    @classmethod
    def joined(cls, parts: Sequence[PendingInsert]) -> PendingInsert:
        """The rows of several pending inserts, in order, as one (group commit runs the
        single-record writes of a group as one ``executemany`` per table)."""
        joined = cls([])
        for part in parts:
            joined.records.extend(part.records)
            joined.sides.extend(part.sides)
        joined.count = len(joined.records)
        return joined

    def statements(self, first_seq: int) -> _Statements:
        """The statements (for ``executemany``) with the records numbered from
        ``first_seq``; the benchmark replays the same ones through plain sqlite3."""
        records: list[tuple[Any, ...]] = []
        scope: list[tuple[int, str, str, int]] = []
        tags: list[tuple[int, str]] = []
        fts: list[tuple[int, str, str]] = []
        seq = first_seq
        for row, (pairs, recency, content, terms, tag_names) in zip(
            self.records, self.sides, strict=True
        ):
            records.append((seq, *row))
            for key, value in pairs:
                scope.append((seq, key, value, recency))
            fts.append((seq, content, terms))
            if tag_names:
                tags.extend([(seq, tag) for tag in tag_names])
            seq += 1
        statements: _Statements = [
            (_INSERT_RECORD, records),
            (_INSERT_SCOPE, scope),
            (_INSERT_FTS, fts),
        ]
        if tags:
            statements.append((_INSERT_TAG, tags))
        return statements


def next_seq(db: sqlite3.Connection) -> int:
    """The ``seq`` the next inserted record gets (what SQLite would pick for the rowid)."""
    row = db.execute(_NEXT_SEQ).fetchone()
    return int(row[0])


def insert_now(db: sqlite3.Connection, pending: PendingInsert) -> None:
    """Store a :class:`PendingInsert` on the connection's thread, inside a transaction."""
    execute_many(db, pending.statements(next_seq(db)))


_NEXT_SEQ: Final = "SELECT coalesce(max(seq), 0) + 1 FROM memory_records"
_INSERT_RECORD: Final = (
    f"INSERT INTO memory_records (seq, {COLUMNS}) VALUES (?, {', '.join('?' * len(COLUMN_NAMES))})"
)
_INSERT_SCOPE: Final = (
    "INSERT INTO memory_scope (record_seq, key, value, created_us) VALUES (?, ?, ?, ?)"
)
_INSERT_TAG: Final = "INSERT INTO memory_tags (record_seq, tag) VALUES (?, ?)"
_INSERT_FTS: Final = "INSERT INTO memory_fts (rowid, content, scope_terms) VALUES (?, ?, ?)"
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)


def recency_key(moment: datetime) -> int:
    """``memory_scope.created_us``: microseconds since 1970 (exact, as schema version 5
    computes it from ``created_at`` for the rows it fills in)."""
    return (moment - _EPOCH) // _MICROSECOND


@lru_cache(maxsize=4096)
def scope_token(key: str, value: str) -> str:
    """The ``scope_terms`` token of one scope pair (schema version 2): hex of the UTF-8
    key, ``x``, hex of the value, ``0`` (letters and digits only, so one FTS5 token,
    and ending in a digit so the Porter stemmer leaves it alone)."""
    return f"{key.encode().hex()}x{value.encode().hex()}0"


def scope_terms(scope: Mapping[str, str]) -> str:
    """A record's ``scope_terms`` text: its pairs' tokens."""
    return " ".join([scope_token(key, value) for key, value in scope.items()])


@lru_cache(maxsize=4096)
def _scope_texts(pairs: tuple[tuple[str, str], ...]) -> tuple[str, str]:
    """A scope's JSON column text and ``scope_terms`` text, from its (canonical) pairs.

    Cached: a batch, and the writers of one process, mostly write to scopes they
    wrote to just before (a user's session), and both texts cost more than the look-up.
    """
    return _to_json(dict(pairs)), " ".join([scope_token(key, value) for key, value in pairs])


_to_json: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""Compact JSON text; one encoder for every row (``json.dumps`` with options builds a
new encoder per call)."""


def _json_or_none(model: BaseModel | None) -> str | None:
    return None if model is None else _to_json(model.model_dump(mode="json"))


def _record_row(record: MemoryRecord, scope_json: str) -> tuple[Any, ...]:
    """The ``memory_records`` row of a record, in :data:`COLUMNS` order (``scope_json``:
    its scope's column text).

    Built field by field rather than through ``model_dump``: the record was validated
    at the edge, and dumping it whole cost as much as validating it.
    """
    expires_at, invalid_at = record.expires_at, record.invalid_at
    created_at = format_timestamp(record.created_at)
    # A new record's two stamps are one moment: format it once.
    updated_at = (
        created_at
        if record.updated_at is record.created_at
        else format_timestamp(record.updated_at)
    )
    return (
        record.id,
        record.kind,
        record.content,
        scope_json,
        _to_json(record.tags) if record.tags else "[]",
        _json_or_none(record.provenance),
        _json_or_none(record.target),
        None if record.payload is None else _to_json(record.payload),
        _to_json([item.model_dump(mode="json") for item in record.supports])
        if record.supports
        else "[]",
        created_at,
        updated_at,
        None if invalid_at is None else format_timestamp(invalid_at),
        record.invalid_reason,
        record.superseded_by,
        None if expires_at is None else format_timestamp(expires_at),
        record.idempotency_key,
    )


def json_text(value: Any) -> str:
    """A JSON column's text; a canonical scope gives one string per scope."""
    return _to_json(value)


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    """The record in a row that starts with :data:`COLUMNS` (extra columns are ignored).

    The store wrote the row from a validated record, so the record is rebuilt without
    validating it again (a third of a listing's time went to that): the same values of
    the same types as validation gives, each JSON column parsed as validation would.
    A row this fast path is not sure of (a payload, a timestamp not in the store's own
    format) goes through full validation instead.
    """
    if row[7] is None:  # payload: arbitrary JSON, left to the validator
        created, updated = _utc_or_none(row[9]), _utc_or_none(row[10])
        invalid_at = None if row[11] is None else _utc_or_none(row[11])
        expires_at = None if row[14] is None else _utc_or_none(row[14])
        if (
            created is not None
            and updated is not None
            and (invalid_at is not None or row[11] is None)
            and (expires_at is not None or row[14] is None)
        ):
            values = {
                "scope": dict(_scope(row[3])),
                "kind": row[1],
                "content": row[2],
                "tags": () if row[4] == "[]" else _tags(row[4]),
                "provenance": None if row[5] is None else _provenance(row[5]),
                "expires_at": expires_at,
                "target": None if row[6] is None else _target(row[6]),
                "payload": None,
                "supports": () if row[8] == "[]" else _supports(row[8]),
                "idempotency_key": row[15],
                "id": row[0],
                "created_at": created,
                "updated_at": updated,
                "invalid_at": invalid_at,
                "invalid_reason": row[12],
                "superseded_by": row[13],
            }
            return _constructed(MemoryRecord, values)
    return _validated_record(row)


def listing_hits(rows: Iterable[Sequence[Any]]) -> list[MemoryHit]:
    """The hits of a listing (no score) of rows that start with :data:`COLUMNS`."""
    return [
        _constructed(MemoryHit, {"record": record_from_row(row), "score": None}) for row in rows
    ]


_M = TypeVar("_M", bound=BaseModel)


def _constructed(model: type[_M], values: dict[str, Any]) -> _M:
    """``model.model_construct(**values)`` given every field in field order, without
    its per-field loop (most of its cost): the instance state it sets, for a model
    without private attributes, extras or ``model_post_init`` (a test pins that)."""
    instance = _new(model)
    _set(instance, "__dict__", values)
    _set(instance, "__pydantic_fields_set__", set(values))
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


_new: Final = object.__new__
_set: Final = object.__setattr__


def _validated_record(row: Sequence[Any]) -> MemoryRecord:
    """The record in a row, validated as any input is."""
    data: dict[str, Any] = {}
    for name, value in zip(COLUMN_NAMES, row, strict=False):
        data[name] = json.loads(value) if name in _JSON_COLUMNS and value is not None else value
    return MemoryRecord.model_validate(data)


def _utc_or_none(text: str | None) -> datetime | None:
    """A stored timestamp (``format_timestamp``'s ``...Z``) as validation makes it, or
    None when absent or not in that form (the caller then validates the row)."""
    if text is None or not text.endswith("Z"):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is UTC else None


# What validation makes of a JSON column, cached by its text: a user's records share
# their scope and often their provenance. Scope dicts are mutable, so each record gets
# a copy; the rest are immutable and shared.
@lru_cache(maxsize=4096)
def _scope(text: str) -> dict[str, str]:
    scope: dict[str, str] = json.loads(text)
    # Canonical as validation makes it: keys sorted (the store writes them so).
    return scope if list(scope) == sorted(scope) else {key: scope[key] for key in sorted(scope)}


@lru_cache(maxsize=4096)
def _tags(text: str) -> tuple[str, ...]:
    tags: list[str] = json.loads(text)
    # Normalised as validation makes them: stripped, unique, sorted (stored so).
    return tuple(sorted({tag.strip() for tag in tags}))


@lru_cache(maxsize=4096)
def _provenance(text: str) -> Provenance:
    return Provenance.model_validate_json(text)


@lru_cache(maxsize=1024)
def _target(text: str) -> MemoryTarget:
    return MemoryTarget.model_validate_json(text)


@lru_cache(maxsize=1024)
def _supports(text: str) -> tuple[Provenance, ...]:
    return tuple(Provenance.model_validate(item) for item in json.loads(text))


async def on_thread(conn: aiosqlite.Connection, function: Callable[..., _T], *args: Any) -> _T:
    """``function(db, *args)`` on aiosqlite's thread, ``db`` being its sqlite3 connection.

    One hand-off to that thread for several statements: each public aiosqlite call is
    a hand-off of its own (tens of microseconds, several times that on a busy machine),
    and a statement with its cursor took three. aiosqlite has no public call for this;
    ``_execute`` is the queue its own methods use (unchanged since 0.17).
    """
    result: _T = await conn._execute(function, conn._conn, *args)  # type: ignore[no-untyped-call]
    return result


async def run(conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> None:
    """Execute one statement; its cursor is closed at once, so it holds no snapshot."""
    await on_thread(conn, execute_now, sql, params)


def execute_now(db: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> None:
    """:func:`run` for code already on the connection's thread."""
    db.execute(sql, params).close()


async def fetchone(
    conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()
) -> sqlite3.Row | tuple[Any, ...] | None:
    """The first row of ``sql``, or None (the cursor is closed at once)."""
    return await on_thread(conn, fetchone_now, sql, params)


def fetchone_now(
    db: sqlite3.Connection, sql: str, params: Sequence[Any] = ()
) -> sqlite3.Row | tuple[Any, ...] | None:
    """:func:`fetchone` for code already on the connection's thread."""
    cursor = db.execute(sql, params)
    try:
        row: sqlite3.Row | tuple[Any, ...] | None = cursor.fetchone()
        return row
    finally:
        cursor.close()


def rows_by_id(
    db: sqlite3.Connection, columns: str, ids: Sequence[str]
) -> dict[str, sqlite3.Row | tuple[Any, ...]]:
    """``columns`` of the stored records among ``ids``, by id (one indexed look-up each);
    on the connection's thread."""
    found = {}
    for record_id in ids:
        row = fetchone_now(db, f"SELECT {columns} FROM memory_records WHERE id = ?", (record_id,))
        if row is not None:
            found[record_id] = row
    return found


def rows_by_key(
    db: sqlite3.Connection, keys: Sequence[IdempotencyKey]
) -> dict[IdempotencyKey, sqlite3.Row | tuple[Any, ...]]:
    """The valid records holding ``keys`` (scope pairs, idempotency key), by key; on the
    connection's thread."""
    found = {}
    for pairs, name in keys:
        row = fetchone_now(
            db,
            f"SELECT {COLUMNS} FROM memory_records "
            "WHERE scope = ? AND idempotency_key = ? AND invalid_at IS NULL",
            (json_text(dict(pairs)), name),
        )
        if row is not None:
            found[(pairs, name)] = row
    return found
