"""How the SQLite backend writes new records: their rows in ``memory_records`` and its
side tables, built before the transaction and numbered in it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Final

from recallstore.backends.sqlite.rows import Statements, execute_many, json_text
from recallstore.backends.sqlite.terms import count_new
from recallstore.records import MemoryRecord, format_timestamp
from recallstore.store import NewRecords

__all__ = [
    "PendingInsert",
    "insert_now",
    "next_seq",
    "recency_key",
    "scope_token",
]

_REQUIRED_COLUMNS: Final = (
    "id",
    "kind",
    "content",
    "scope",
    "tags",
    "supports",
    "created_at",
    "updated_at",
)
_OPTIONAL_COLUMNS: Final = (
    "provenance",
    "target",
    "payload",
    "invalid_at",
    "invalid_reason",
    "superseded_by",
    "expires_at",
    "idempotency_key",
    "observed_at",
)
"""The columns a record may leave NULL; an INSERT writes them after the others."""
_ALL_NULL: Final = (None,) * len(_OPTIONAL_COLUMNS)
_ALL_NULL_MARKS: Final = (True,) * len(_OPTIONAL_COLUMNS)


class PendingInsert:
    """The rows that store a batch of records, built before its transaction runs.

    Each record's ``seq`` is assigned in the transaction (:meth:`statements`), so the
    scope, tag and FTS rows name it directly: no look-up by id per side row, and no
    trigger (schema version 5) tokenising a JSON scope per record. Everything but the
    ``seq`` is built here, on the event loop; :meth:`statements` only numbers the rows,
    in one pass over the batch.

    A column a record leaves empty is written as a ``NULL`` in the statement's text,
    not bound: Python 3.11's ``sqlite3`` spends about a microsecond on each ``None`` it
    binds (it looks for an adapter and formats the error it then drops), and a new
    record mostly has eight: a sixth of the time its statements took. Records with the
    same empty columns share one statement; a batch mostly has one.
    """

    __slots__ = (
        "contents",
        "count",
        "nulls",
        "observed",
        "pairs",
        "recency",
        "tags",
        "terms",
        "values",
    )

    def __init__(self, records: Sequence[MemoryRecord]) -> None:
        self._start(len(records))
        for record in records:
            fields = record.__dict__
            self._add(fields, fields["id"], fields["created_at"], fields["updated_at"])

    @classmethod
    def of_new(cls, batch: NewRecords) -> PendingInsert:
        """The rows of a write's new records, from its inputs, ids and stamps (the records
        themselves can then be built later: :meth:`NewRecords.records`)."""
        pending = cls.__new__(cls)
        pending._start(len(batch.inputs))
        for inp, record_id, stamp in zip(batch.inputs, batch.ids, batch.stamps, strict=True):
            pending._add(inp.__dict__, record_id, stamp, stamp)
        return pending

    def _start(self, count: int) -> None:
        self.count = count
        # Column by column, one entry per record: fewer objects live through the
        # transaction than with a tuple per record, so the garbage collector (which runs
        # every 700 new ones) has less to walk.
        self.nulls: list[tuple[bool, ...]] = []  # which optional columns are NULL
        self.values: list[tuple[Any, ...]] = []  # the other columns' values
        self.pairs: list[tuple[tuple[str, str], ...]] = []
        self.recency: list[int] = []
        self.observed: list[int | None] = []  # memory_scope.observed_us (schema 10)
        self.contents: list[str] = []
        self.terms: list[str] = []
        self.tags: list[Sequence[str]] = []

    def _add(
        self, fields: dict[str, Any], record_id: str, created_at: datetime, updated_at: datetime
    ) -> None:
        pairs, scope_json, terms = _scope_texts(tuple(fields["scope"].items()))
        nulls, values = _record_row(fields, record_id, created_at, updated_at, scope_json)
        self.nulls.append(nulls)
        self.values.append(values)
        self.pairs.append(pairs)
        self.recency.append(recency_key(created_at))
        # As memory_records.observed_at: NULL unless observed before the save.
        observed_at = fields["observed_at"]
        self.observed.append(
            None if observed_at is None or observed_at >= created_at else recency_key(observed_at)
        )
        self.contents.append(fields["content"])
        self.terms.append(terms)
        self.tags.append(fields["tags"])

    @classmethod
    def joined(cls, parts: Sequence[PendingInsert]) -> PendingInsert:
        """The rows of several pending inserts, in order, as one (group commit runs the
        single-record writes of a group as one ``executemany`` per table)."""
        joined = cls([])
        for part in parts:
            for name in _COLUMN_LISTS:
                getattr(joined, name).extend(getattr(part, name))
        joined.count = len(joined.values)
        return joined

    def statements(self, first_seq: int) -> Statements:
        """The statements (for ``executemany``) with the records numbered from
        ``first_seq``; the benchmark replays the same ones through plain sqlite3."""
        records: dict[tuple[bool, ...], list[tuple[Any, ...]]] = {}
        scope: list[tuple[int, str, str, int]] = []
        # A record observed before its save: its scope rows carry that time too. Apart,
        # so the rows of the others bind no NULL (see the class's docstring).
        scope_observed: list[tuple[int, str, str, int, int]] = []
        tags: list[tuple[int, str]] = []
        fts: list[tuple[int, str, str]] = []
        seq = first_seq
        for nulls, values, pairs, recency, observed, content, terms, tag_names in zip(
            self.nulls,
            self.values,
            self.pairs,
            self.recency,
            self.observed,
            self.contents,
            self.terms,
            self.tags,
            strict=True,
        ):
            rows = records.get(nulls)
            if rows is None:
                rows = records[nulls] = []
            rows.append((seq, *values))
            if observed is None:
                for key, value in pairs:
                    scope.append((seq, key, value, recency))
            else:
                for key, value in pairs:
                    scope_observed.append((seq, key, value, recency, observed))
            fts.append((seq, content, terms))
            if tag_names:
                tags.extend([(seq, tag) for tag in tag_names])
            seq += 1
        statements: Statements = [(_insert_record(nulls), rows) for nulls, rows in records.items()]
        statements.append((_INSERT_SCOPE, scope))
        if scope_observed:
            statements.append((_INSERT_SCOPE_OBSERVED, scope_observed))
        statements.append((_INSERT_FTS, fts))
        if tags:
            statements.append((_INSERT_TAG, tags))
        if self.count:
            statements.extend(count_new(first_seq))  # memory_terms (schema version 12)
        return statements


_COLUMN_LISTS: Final = tuple(name for name in PendingInsert.__slots__ if name != "count")


@lru_cache(maxsize=1 << len(_OPTIONAL_COLUMNS))  # one per set of NULL columns
def _insert_record(nulls: tuple[bool, ...]) -> str:
    """The ``memory_records`` INSERT of ``seq``, the required columns, and the optional
    ones with a literal ``NULL`` for each that ``nulls`` marks."""
    names = ", ".join(["seq", *_REQUIRED_COLUMNS, *_OPTIONAL_COLUMNS])
    values = ", ".join(
        ["?"] * (1 + len(_REQUIRED_COLUMNS)) + ["NULL" if null else "?" for null in nulls]
    )
    return f"INSERT INTO memory_records ({names}) VALUES ({values})"


def next_seq(db: sqlite3.Connection) -> int:
    """The ``seq`` the next inserted record gets (what SQLite would pick for the rowid)."""
    row = db.execute(_NEXT_SEQ).fetchone()
    return int(row[0])


def insert_now(db: sqlite3.Connection, pending: PendingInsert) -> None:
    """Store a :class:`PendingInsert` on the connection's thread, inside a transaction."""
    execute_many(db, pending.statements(next_seq(db)))


_NEXT_SEQ: Final = "SELECT coalesce(max(seq), 0) + 1 FROM memory_records"
_INSERT_SCOPE: Final = (
    "INSERT INTO memory_scope (record_seq, key, value, created_us) VALUES (?, ?, ?, ?)"
)
_INSERT_SCOPE_OBSERVED: Final = (
    "INSERT INTO memory_scope (record_seq, key, value, created_us, observed_us) "
    "VALUES (?, ?, ?, ?, ?)"
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


@lru_cache(maxsize=4096)
def _scope_texts(
    pairs: tuple[tuple[str, str], ...],
) -> tuple[tuple[tuple[str, str], ...], str, str]:
    """A scope's (canonical) pairs, its JSON column text and its ``scope_terms`` text.

    Cached: a batch, and the writers of one process, mostly write to scopes they
    wrote to just before (a user's session), and both texts cost more than the look-up.
    The pairs returned are the cached ones, so the records of one scope share them.
    """
    return (
        pairs,
        json_text(dict(pairs)),
        " ".join([scope_token(key, value) for key, value in pairs]),
    )


def _record_row(
    fields: dict[str, Any],
    record_id: str,
    created_at: datetime,
    updated_at: datetime,
    scope_json: str,
) -> tuple[tuple[bool, ...], tuple[Any, ...]]:
    """A record's ``memory_records`` row from its fields (a record's, or a new record's
    input's: the fields an input lacks are None) and ``scope_json``, its scope's column
    text: which of :data:`_OPTIONAL_COLUMNS` are NULL, and the values of
    :data:`_REQUIRED_COLUMNS` followed by those of the optional columns that are not.

    Built field by field rather than through ``model_dump``: the record was validated
    at the edge, and dumping it whole cost as much as validating it.
    """
    created_text = format_timestamp(created_at)
    tags, supports = fields["tags"], fields["supports"]
    required = (
        record_id,
        fields["kind"],
        fields["content"],
        scope_json,
        json_text(tags) if tags else "[]",
        json_text([item.model_dump(mode="json") for item in supports]) if supports else "[]",
        created_text,
        # A new record's two stamps are one moment: format it once.
        created_text if updated_at is created_at else format_timestamp(updated_at),
    )
    provenance, target, payload = fields["provenance"], fields["target"], fields["payload"]
    invalid_at, expires_at = fields.get("invalid_at"), fields["expires_at"]
    # NULL when observed at (or, within the skew, after) the save: most records.
    observed_at = fields["observed_at"]
    observed_text = (
        None if observed_at is None or observed_at >= created_at else format_timestamp(observed_at)
    )
    optional = (
        None if provenance is None else json_text(provenance.model_dump(mode="json")),
        None if target is None else json_text(target.model_dump(mode="json")),
        None if payload is None else json_text(payload),
        None if invalid_at is None else format_timestamp(invalid_at),
        fields.get("invalid_reason"),
        fields.get("superseded_by"),
        None if expires_at is None else format_timestamp(expires_at),
        fields["idempotency_key"],
        observed_text,
    )
    if optional == _ALL_NULL:  # most new records
        return _ALL_NULL_MARKS, required
    nulls = tuple([value is None for value in optional])
    return nulls, required + tuple([value for value in optional if value is not None])
