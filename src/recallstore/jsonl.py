"""Lossless JSONL export and import of memory records.

One :class:`~recallstore.records.MemoryRecord` per line (``model_dump_json``), oldest
first. Importing keeps every field exactly — ids, timestamps, the invalidation chain —
which :meth:`MemoryStore.write` cannot do (it mints new ids), so it uses a store's
optional ``"import"`` extension (:class:`SupportsImportRecords`). Exporting uses the
``"export"`` extension when present and otherwise one ``search()`` listing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

from recallstore._json import UntrustedJsonError, parse_untrusted_json
from recallstore.errors import ConfigurationError, MemoryValidationError
from recallstore.records import MAX_LIMIT, MemoryRecord, MemorySearchQuery
from recallstore.store import (
    EXPORT_EXTENSION,
    IMPORT_EXTENSION,
    MemoryStore,
    SupportsExportRecords,
    SupportsImportRecords,
    check_import_batch,
    scope_matches,
)

__all__ = [
    "EXPORT_EXTENSION",
    "IMPORT_EXTENSION",
    "ImportResult",
    "SupportsExportRecords",
    "SupportsImportRecords",
    "export_jsonl",
    "filter_by_scope",
    "import_records",
    "iter_records",
    "read_jsonl",
]

DEFAULT_BATCH_SIZE = 500

Progress = Callable[[int], None]
"""Called with the number of records handled so far."""


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did: records inserted, and records already present unchanged."""

    inserted: int
    skipped: int


def _has_extension(store: MemoryStore, name: str) -> bool:
    return name in store.capabilities().extensions


async def iter_records(
    store: MemoryStore, scope: Mapping[str, str] | None = None
) -> AsyncIterator[MemoryRecord]:
    """Every record matching ``scope`` — invalidated and expired included — oldest first.

    Without the ``"export"`` extension this is one ``search()`` listing, which cannot
    page: a store holding :data:`~recallstore.records.MAX_LIMIT` or more matching
    records then raises :class:`~recallstore.errors.ConfigurationError`.
    """
    query = MemorySearchQuery(
        scope=dict(scope or {}),
        limit=MAX_LIMIT,
        include_invalidated=True,
        include_expired=True,
    )
    if _has_extension(store, EXPORT_EXTENSION) and isinstance(store, SupportsExportRecords):
        async for record in store.export_records(query.scope):
            yield record
        return
    hits = await store.search(query)
    if len(hits) >= MAX_LIMIT:
        raise ConfigurationError(
            f"{len(hits)} or more records match and this store lacks the "
            f"'{EXPORT_EXTENSION}' extension, so they cannot all be listed"
        )
    for hit in sorted(hits, key=lambda h: (h.record.created_at, h.record.id)):
        yield hit.record


async def export_jsonl(
    store: MemoryStore,
    out: TextIO,
    *,
    scope: Mapping[str, str] | None = None,
    progress: Progress | None = None,
) -> int:
    """Write every record matching ``scope`` to ``out`` as JSONL, oldest first.

    Returns the number of records written.
    """
    count = 0
    async for record in iter_records(store, scope):
        out.write(record.model_dump_json())
        out.write("\n")
        count += 1
        if progress is not None:
            progress(count)
    return count


def read_jsonl(lines: Iterable[str], *, source: str = "<input>") -> list[MemoryRecord]:
    """Parse and validate JSONL records; blank lines are ignored.

    Everything is checked before anything is written: a malformed line, a record no
    store could import (see :func:`recallstore.store.check_import_batch`) or an id that
    appears twice raises :class:`~recallstore.errors.MemoryValidationError` whose field
    is ``"<source>:<line number>"``.
    """
    records: list[MemoryRecord] = []
    first_line_of: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            data = parse_untrusted_json(line)
        except UntrustedJsonError as exc:
            raise MemoryValidationError(where, f"not valid JSON: {exc}", line) from None
        if not isinstance(data, dict):
            raise MemoryValidationError(where, "expected a JSON object (one record)", data)
        try:
            # Constructing directly (not model_validate) keeps the offending field's name.
            record = MemoryRecord(**data)
            check_import_batch([record])
        except MemoryValidationError as exc:
            field = exc.field.removeprefix("records[0].")
            raise MemoryValidationError(where, f"{field}: {exc.message}", exc.value) from None
        if record.id in first_line_of:
            raise MemoryValidationError(
                where, f"id {record.id!r} already appeared on line {first_line_of[record.id]}"
            )
        first_line_of[record.id] = number
        records.append(record)
    return records


async def import_records(
    store: MemoryStore,
    records: Sequence[MemoryRecord],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Progress | None = None,
) -> ImportResult:
    """Insert ``records`` unchanged (ids, timestamps, chains) in atomic batches.

    Needs the store's ``"import"`` extension; without it raises
    :class:`~recallstore.errors.ConfigurationError` before writing anything. Records
    already present and identical are skipped, so re-running an interrupted import is
    safe; a *different* record under an existing id raises
    :class:`~recallstore.errors.MemoryConflictError` (earlier batches stay written).
    """
    if batch_size < 1:
        raise MemoryValidationError("batch_size", "must be at least 1", batch_size)
    if not (_has_extension(store, IMPORT_EXTENSION) and isinstance(store, SupportsImportRecords)):
        raise ConfigurationError(
            f"this store ({type(store).__name__}) does not support lossless import: "
            f"it lacks the '{IMPORT_EXTENSION}' extension"
        )
    inserted = 0
    done = 0
    for start in range(0, len(records), batch_size):
        batch = records[start : start + batch_size]
        inserted += await store.import_records(batch)
        done += len(batch)
        if progress is not None:
            progress(done)
    return ImportResult(inserted=inserted, skipped=len(records) - inserted)


def filter_by_scope(
    records: Iterable[MemoryRecord], scope: Mapping[str, str]
) -> list[MemoryRecord]:
    """The records whose scope contains every pair of ``scope`` (subset match)."""
    return [record for record in records if scope_matches(record.scope, scope)]
