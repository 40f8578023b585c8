"""The Postgres backend's ``memory_records`` rows: the columns, and a record to a row
and back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recallstore.backends.postgres.lexemes import index_stems
from recallstore.records import MemoryRecord

__all__ = ["COLUMNS", "COLUMN_NAMES", "ROW_VALUES", "record_from", "row_params"]

COLUMNS = (
    "id, scope, kind, content, tags, provenance, created_at, updated_at, invalid_at, "
    "invalid_reason, superseded_by, expires_at, target, payload, supports, idempotency_key, "
    "observed_at"
)
"""The record columns, in the order :func:`record_from` reads them."""

COLUMN_NAMES = tuple(name.strip() for name in COLUMNS.split(","))
""":data:`COLUMNS` one name each."""

ROW_VALUES = (
    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
    "array_to_tsvector(%s::text[]), %s)"
)
"""One row's placeholders for an insert of ``COLUMNS, search_text, search_length``."""


def row_params(record: MemoryRecord) -> tuple[Any, ...]:
    """The parameters of ``record``'s row, in the order of :data:`ROW_VALUES`."""
    from psycopg.types.json import Json, Jsonb

    data = record.model_dump(mode="json")
    return (
        record.id,
        Jsonb(record.scope),
        record.kind,
        record.content,
        list(record.tags),
        None if record.provenance is None else Jsonb(data["provenance"]),
        record.created_at,
        record.updated_at,
        record.invalid_at,
        record.invalid_reason,
        record.superseded_by,
        record.expires_at,
        None if record.target is None else Jsonb(data["target"]),
        None if record.payload is None else Json(record.payload),  # json: as written
        Jsonb(data["supports"]),
        record.idempotency_key,
        None if record.observed_at == record.created_at else record.observed_at,
        *index_stems(record.content, record.scope),
    )


def record_from(row: Sequence[Any]) -> MemoryRecord:
    """The record of a row read as :data:`COLUMNS`."""
    return MemoryRecord.model_validate(dict(zip(COLUMN_NAMES, row, strict=True)))
