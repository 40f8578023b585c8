"""Import batches: the checks every store makes before inserting records unchanged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from recallstore.errors import MemoryConflictError, MemoryValidationError
from recallstore.records import MemoryRecord
from recallstore.values import RECORD_ID_RULE, is_valid_record_id


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
                    f"{value!r} is not a record id: {RECORD_ID_RULE} "
                    "(like the ids stores generate), so they fit in a URL",
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
