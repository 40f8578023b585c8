"""The Postgres backend's ``memory_records`` rows: the columns, and a record to a row
and back."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from recallstore.backends.postgres.lexemes import content_stems, scope_lexemes
from recallstore.records import MemoryRecord, MemoryTarget, MemoryWriteInput, Provenance
from recallstore.store import NewRecords, observed_at_saved

__all__ = [
    "COLUMNS",
    "COLUMN_NAMES",
    "TEXT_COLUMNS",
    "insert_arrays",
    "insert_statement",
    "new_insert_arrays",
    "record_from",
    "record_from_text",
]

COLUMNS = (
    "id, scope, kind, content, tags, provenance, created_at, updated_at, invalid_at, "
    "invalid_reason, superseded_by, expires_at, target, payload, supports, idempotency_key, "
    "observed_at"
)
"""The record columns, in the order :func:`record_from` reads them."""

COLUMN_NAMES = tuple(name.strip() for name in COLUMNS.split(","))
""":data:`COLUMNS` one name each."""

_JSON_COLUMNS = ("scope", "provenance", "target", "payload", "supports")
_JSON_AT = tuple(COLUMN_NAMES.index(name) for name in _JSON_COLUMNS)

TEXT_COLUMNS = ", ".join(
    f"{name}::text AS {name}" if name in _JSON_COLUMNS else name for name in COLUMN_NAMES
)
""":data:`COLUMNS` with the JSON ones as their text, decoded only when a record is
built of the row (:func:`record_from_text`)."""

_ARRAYS = (
    ("id", "text"),
    ("scope", "text"),
    ("kind", "text"),
    ("content", "text"),
    ("tags", "text"),
    ("provenance", "text"),
    ("created_at", "timestamptz"),
    ("updated_at", "timestamptz"),
    ("invalid_at", "timestamptz"),
    ("invalid_reason", "text"),
    ("superseded_by", "text"),
    ("expires_at", "timestamptz"),
    ("target", "text"),
    ("payload", "text"),
    ("supports", "text"),
    ("idempotency_key", "text"),
    ("observed_at", "timestamptz"),
    ("stems", "text"),
    ("search_length", "int"),
)
_SOURCES = {
    "scope": "scope::jsonb",
    # A subquery a row cost most of the SELECT's time: only rows with tags run it.
    "tags": "CASE WHEN tags IS NULL THEN '{}'::text[] "
    "ELSE ARRAY(SELECT jsonb_array_elements_text(tags::jsonb)) END",
    "updated_at": "coalesce(updated_at, created_at)",
    "provenance": "provenance::jsonb",
    "target": "target::jsonb",
    "payload": "payload::json",
    "supports": "coalesce(supports::jsonb, '[]')",
}


def insert_statement(table: str) -> str:
    """One ``INSERT`` of any number of rows: a column array each (:func:`insert_arrays`),
    so the statement's text is the same for every batch (psycopg parses it once; a
    ``VALUES`` list of 19 placeholders a row was most of a 1,000-record write's time)."""
    names = ", ".join(name for name, _ in _ARRAYS)
    arrays = ", ".join(f"%b::{kind}[]" for _, kind in _ARRAYS)  # binary: no escaping
    sources = ", ".join(_SOURCES.get(name, name) for name in COLUMN_NAMES)
    return (
        f"INSERT INTO {table} ({COLUMNS}, search_text, search_length) "
        f"SELECT {sources}, array_to_tsvector(string_to_array(stems, ' ')), search_length "
        f"FROM unnest({arrays}) AS r({names})"
    )


_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

_Row = MemoryRecord | MemoryWriteInput
_Rows = Sequence[_Row]
_ALL = slice(None)


def insert_arrays(records: Sequence[MemoryRecord]) -> list[list[Any] | None]:
    """The parameters of :func:`insert_statement` for ``records``, in their order. A
    record's lexemes (letters and digits, or ``scope:`` hex ``=`` hex) hold no space.

    Column by column; a column no record fills is sent as NULL rather than an array of
    NULLs (``unnest`` pads it to the others' length), so most of a plain write's
    optional columns cost nothing to encode or send; so do ``updated_at`` when every
    record's is its ``created_at`` and ``supports`` when every record's is empty (the
    statement fills both in). Scopes alike are encoded once."""
    return _arrays(
        records,
        [record.id for record in records],
        [record.created_at for record in records],
        [record.updated_at for record in records],
        (
            _optional(records, "invalid_at"),
            _optional(records, "invalid_reason"),
            _optional(records, "superseded_by"),
        ),
        _observed(records),
    )


def new_insert_arrays(batch: NewRecords, page: slice = _ALL) -> list[list[Any] | None]:
    """:func:`insert_arrays` of a write's new records (``page`` of them), from their
    inputs, ids and stamps, before the records are built: the same arrays, as a new
    record holds its input's fields, is created and updated at its stamp, is valid, and
    is observed as given or at its stamp."""
    inputs, stamps = batch.inputs[page], list(batch.stamps[page])
    saved = map(observed_at_saved, map(attrgetter("observed_at"), inputs), stamps)
    observed = [None if at == stamp else at for at, stamp in zip(saved, stamps, strict=True)]
    return _arrays(
        inputs,
        list(batch.ids[page]),
        stamps,
        stamps,
        (None, None, None),
        None if all(value is None for value in observed) else observed,
    )


def _arrays(
    rows: _Rows,
    ids: list[str],
    created: list[datetime],
    updated: list[datetime],
    invalid: tuple[list[Any] | None, list[Any] | None, list[Any] | None],
    observed: list[datetime | None] | None,
) -> list[list[Any] | None]:
    # The columns records and inputs share, read the same way from either; the others
    # as given, in the statement's order.
    scopes: dict[tuple[tuple[str, str], ...], tuple[str, str]] = {}
    scope_texts: list[str] = []
    stems: list[str] = []
    lengths: list[int] = []
    for row in rows:
        pairs = tuple(row.scope.items())
        encoded = scopes.get(pairs)
        if encoded is None:
            # The scope's JSON text and its lexemes joined by spaces, once a batch.
            encoded = scopes[pairs] = (_json(row.scope), " ".join(scope_lexemes(pairs)))
        text, lexemes = encoded
        scope_texts.append(text)
        found, length = content_stems(row.content)
        if lexemes:
            found.append(lexemes)
        stems.append(" ".join(found))
        lengths.append(length)
    return [
        ids,
        scope_texts,
        [row.kind for row in rows],
        [row.content for row in rows],
        _optional(rows, "tags", lambda row, _: _json(list(row.tags)), empty=True),
        _optional(rows, "provenance", _field_json),
        created,
        None if updated == created else updated,
        *invalid,
        _optional(rows, "expires_at"),
        _optional(rows, "target", _field_json),
        # json: the payload kept as written (schema version 7).
        _optional(rows, "payload", lambda row, _: json.dumps(row.payload)),
        _optional(rows, "supports", _field_json, empty=True),
        _optional(rows, "idempotency_key"),
        observed,
        stems,
        lengths,
    ]


_EMPTY = "[]"


def _optional(
    rows: _Rows,
    name: str,
    encode: Callable[[_Row, str], Any] | None = None,
    empty: bool = False,
) -> list[Any] | None:
    # None when no row holds a value (with ``empty``, a non-empty one); else each
    # row's value (None for an empty one), or encode(row, name).
    values = list(map(attrgetter(name), rows))
    if empty:
        values = [value or None for value in values]
    if all(value is None for value in values):
        return None
    if encode is None:
        return values
    pairs = zip(rows, values, strict=True)
    return [None if value is None else encode(row, name) for row, value in pairs]


def _field_json(row: _Row, name: str) -> str:
    # As the record serialises the field in JSON mode (an input's field is the same
    # model, serialised alike).
    return _json(row.model_dump(mode="json", include={name})[name])


def _observed(records: Sequence[MemoryRecord]) -> list[datetime | None] | None:
    # NULL when the record was observed when it was saved (schema version 8).
    values = [
        None if record.observed_at == record.created_at else record.observed_at
        for record in records
    ]
    return None if all(value is None for value in values) else values


def record_from(row: Sequence[Any]) -> MemoryRecord:
    """The record of a row read as :data:`COLUMNS`.

    The store wrote the row from a validated record, so a row without a payload is
    rebuilt without validating it again (most of a listing's time went to that): the
    same values of the same types validation gives (timestamps in UTC, the scope's keys
    sorted, tags a tuple, provenance and supports as models). A row with a payload (held
    to the payload rules), or one this path is not sure of, is validated whole.
    """
    (id_, scope, kind, content, tags, provenance, created, updated, invalid_at) = row[:9]
    (invalid_reason, superseded_by, expires_at, target, payload, supports) = row[9:15]
    (idempotency_key, observed) = row[15:17]
    if payload is None and isinstance(scope, dict) and isinstance(tags, list):
        created_at = _utc(created)
        values = {
            "scope": scope if list(scope) == sorted(scope) else dict(sorted(scope.items())),
            "kind": kind,
            "content": content,
            "tags": tuple(sorted({tag.strip() for tag in tags})),
            "provenance": None if provenance is None else Provenance.model_validate(provenance),
            "expires_at": _utc(expires_at),
            "target": None if target is None else MemoryTarget.model_validate(target),
            "payload": None,
            "supports": tuple(Provenance.model_validate(item) for item in supports),
            "idempotency_key": idempotency_key,
            "id": id_,
            "created_at": created_at,
            "updated_at": _utc(updated),
            "invalid_at": _utc(invalid_at),
            "invalid_reason": invalid_reason,
            "superseded_by": superseded_by,
            # NULL when the record was observed when it was saved (schema version 8).
            "observed_at": created_at if observed is None else _utc(observed),
        }
        return MemoryRecord.trusted(values)
    return MemoryRecord.model_validate(dict(zip(COLUMN_NAMES, row, strict=True)))


def record_from_text(row: Sequence[Any]) -> MemoryRecord:
    """The record of a row read as :data:`TEXT_COLUMNS` (as psycopg decodes JSON, less
    its work per value: psycopg's loader takes bytes and sniffs their encoding first)."""
    values = list(row)
    for at in _JSON_AT:
        text = values[at]
        if text is not None:
            values[at] = [] if text == _EMPTY else _decode(text)
    return record_from(values)


_decode = json.JSONDecoder().decode


def _utc(moment: datetime | None) -> datetime | None:
    # psycopg gives timestamptz in the session's time zone; validation gives UTC.
    return None if moment is None else moment.astimezone(UTC)
