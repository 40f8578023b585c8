"""Records rebuilt from the SQLite backend's rows without re-validation equal validated ones."""

import asyncio
import math
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends._hits import scored_hit
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.insert import PendingInsert, insert_now
from recallstore.backends.sqlite.rows import (
    COLUMNS,
    _validated_record,
    listing_hits,
    record_from_row,
    rows_by_id,
)
from recallstore.backends.sqlite.search import (
    _capped_counts_now,
    choose_driver_now,
    filters_of,
    narrowest_within_now,
)
from recallstore.errors import MemoryValidationError
from recallstore.records import MemoryHit, MemoryRecord, MemoryTarget, Provenance
from recallstore.store import NewRecords

NOW = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)

RECORDS = [
    MemoryRecord(id="m1", scope={"user": "u1"}, content="plain", created_at=NOW, updated_at=NOW),
    MemoryRecord(
        id="m2",
        scope={"user": "Ünï 用户", "tenant": 't"1'},
        kind="profile",
        content="every field set",
        tags=["b", " a", "a"],
        provenance=Provenance(conversation_id="c", run_id="r", author="me"),
        target=MemoryTarget(section="s", key="k"),
        supports=[Provenance(author="x"), Provenance(run_id="y")],
        created_at=NOW,
        updated_at=NOW + timedelta(seconds=1),
        invalid_at=NOW + timedelta(seconds=2),
        invalid_reason="wrong",
        superseded_by="m1",
        expires_at=NOW + timedelta(days=3),
        idempotency_key="key",
    ),
    MemoryRecord(
        id="m3",
        scope={},
        content="with a payload",
        payload={"x": [1, 2.5, None, "s", {"y": True}]},
        created_at=NOW,
        updated_at=NOW,
    ),
    MemoryRecord(
        id="m4",
        scope={"a": "b"},
        content="old",
        created_at=datetime(1000, 1, 1, tzinfo=UTC),
        updated_at=NOW,
    ),
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, ...]]:
    """The ``memory_records`` row of each of RECORDS, by id: stored by the write path's
    statements (one batch) in a store's file, and read back."""
    path = tmp_path_factory.mktemp("rows") / "memory.db"

    async def create() -> None:
        async with SqliteMemoryStore(path, journal=None):
            pass

    asyncio.run(create())
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN")
        insert_now(db, PendingInsert(RECORDS))
        db.execute("COMMIT")
        rows = db.execute(f"SELECT {COLUMNS} FROM memory_records").fetchall()
    finally:
        db.close()
    return {row[0]: tuple(row) for row in rows}


def test_a_batch_binds_no_null_and_shares_statements() -> None:
    statements = PendingInsert([*RECORDS, *RECORDS]).statements(1)
    inserts = [rows for sql, rows in statements if sql.startswith("INSERT INTO memory_records")]
    # m1 and m4 leave the same columns empty; m2 and m3 each leave others.
    assert sorted(len(rows) for rows in inserts) == [2, 2, 4]
    assert all(value is not None for _, rows in statements for row in rows for value in row)
    assert sorted(row[0] for rows in inserts for row in rows) == list(range(1, 9))


def test_a_new_batchs_rows_from_its_inputs_equal_those_from_its_records() -> None:
    # What the write path stores (rows from the inputs, records built during COMMIT)
    # is what it would store from the records it returns.
    inputs = [
        MemoryWriteInput(scope={"user": "u1"}, content="plain"),
        MemoryWriteInput(
            scope={"user": "Ünï 用户", "tenant": 't"1'},
            kind="profile",
            content="every writable field set",
            tags=["b", " a"],
            provenance=Provenance(conversation_id="c", run_id="r", author="me"),
            target=MemoryTarget(section="s", key="k"),
            supports=[Provenance(author="x"), Provenance(run_id="y")],
            expires_at=NOW + timedelta(days=3),
            idempotency_key="key",
            payload={"x": [1, 2.5, None, "s", {"y": True}]},
            supersedes="m0",
        ),
        MemoryWriteInput(scope={}, content="payload", payload="text"),
    ]
    stamps = [NOW + timedelta(microseconds=n) for n in range(3)]
    batch = NewRecords(inputs, ["n1", "n2", "n3"], stamps)
    from_inputs = PendingInsert.of_new(batch).statements(7)
    assert not batch.built
    assert from_inputs == PendingInsert(batch.records()).statements(7)


def assert_same(built: MemoryRecord, validated: MemoryRecord) -> None:
    assert built == validated
    assert list(built.__dict__) == list(validated.__dict__)
    for name, value in validated.__dict__.items():
        assert type(built.__dict__[name]) is type(value), name
        if isinstance(value, datetime):
            assert built.__dict__[name].tzinfo is value.tzinfo, name
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump_json() == validated.model_dump_json()
    assert repr(built) == repr(validated)
    assert built.model_copy(update={"content": "x"}) == validated.model_copy(
        update={"content": "x"}
    )


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.id)
def test_a_row_gives_back_the_record_validation_would(
    record: MemoryRecord, stored: dict[str, tuple[Any, ...]]
) -> None:
    row = stored[record.id]
    assert_same(record_from_row(row), _validated_record(row))
    assert record_from_row(row) == record
    # Each record owns its scope dict, though the parsed scope is cached.
    assert record_from_row(row).scope is not record_from_row(row).scope


def test_a_row_not_in_the_stores_own_form_is_validated(
    stored: dict[str, tuple[Any, ...]],
) -> None:
    row: list[Any] = list(stored[RECORDS[1].id])
    row[3] = '{"user":"u","tenant":"t"}'  # keys out of canonical order
    row[9] = "2026-03-04T05:06:07.890123+00:00"  # an offset instead of Z
    row[11] = "2026-03-04T06:06:07+01:00"
    row[14] = "not a time"
    with pytest.raises(Exception, match="expires_at"):
        _validated_record(row)
    row[14] = None
    built = record_from_row(row)
    assert_same(built, _validated_record(row))
    assert list(built.scope) == ["tenant", "user"]
    row[11] = None
    row[9] = "2026-03-04T05:06:07.890123Z"
    row[3] = '{"user":"u","tenant":"t"}'
    assert_same(record_from_row(row), _validated_record(row))
    assert list(record_from_row(row).scope) == ["tenant", "user"]


def test_models_built_directly_need_no_private_state() -> None:
    # _Contract.trusted sets what model_construct sets for models without these.
    for model in (MemoryRecord, MemoryHit):
        assert not model.__private_attributes__
        assert model.__pydantic_post_init__ is None
        assert model.model_config.get("extra") == "forbid"


def test_scored_hits_equal_validated_hits(stored: dict[str, tuple[Any, ...]]) -> None:
    records = [record_from_row(stored[record.id]) for record in RECORDS]
    hits = [scored_hit(record, 0.5 + n) for n, record in enumerate(records)]
    expected = [MemoryHit(record=record, score=0.5 + n) for n, record in enumerate(RECORDS)]
    assert hits == expected
    assert [hit.model_fields_set for hit in hits] == [hit.model_fields_set for hit in expected]
    with pytest.raises(MemoryValidationError, match="score"):
        scored_hit(records[0], math.inf)


async def test_rows_by_id_reads_any_number_of_ids_once_each(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, journal=None) as store:
        written = await store.write(
            [MemoryWriteInput(scope={"user": "u"}, content=f"note {n}") for n in range(1_203)]
        )
    wanted = [record.id for record in reversed(written)] + [written[7].id, "missing"]
    db = sqlite3.connect(path)
    try:
        found = rows_by_id(db, COLUMNS, wanted)
        invalid = rows_by_id(db, "invalid_at", wanted[:3])
        alone = rows_by_id(db, COLUMNS, [written[5].id])
        missing = rows_by_id(db, COLUMNS, ["missing"])
    finally:
        db.close()
    assert list(found) == [record.id for record in reversed(written)]  # asked order
    assert [record_from_row(row) for row in found.values()] == list(reversed(written))
    assert invalid == {record.id: (None,) for record in list(reversed(written))[:3]}
    assert [record_from_row(row) for row in alone.values()] == [written[5]]
    assert list(alone) == [written[5].id]
    assert missing == {}


def test_listing_hits_equal_validated_hits(stored: dict[str, tuple[Any, ...]]) -> None:
    rows = [stored[record.id] for record in RECORDS]
    hits = listing_hits(rows)
    expected = [MemoryHit(record=record, score=None) for record in RECORDS]
    assert hits == expected
    assert [hit.model_fields_set for hit in hits] == [hit.model_fields_set for hit in expected]


async def test_the_narrowest_pair_drives_as_full_counts_would_choose(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    sizes = {"big": 300, "mid": 40, "small": 3, "tie": 3}
    async with SqliteMemoryStore(path, journal=None) as store:
        for name, size in sizes.items():
            scope = {"a": "all", "b": "big" if name != "big" else "other", "c": name}
            await store.write(
                [MemoryWriteInput(scope=scope, content=f"{name} {n}") for n in range(size)]
            )
    db = sqlite3.connect(path)
    try:
        scopes: list[dict[str, str]] = [
            {"a": "all", "c": "big"},
            {"a": "all", "b": "big", "c": "mid"},
            {"a": "all", "b": "big", "c": "small"},
            {"a": "all", "b": "big"},
            {"a": "all", "b": "nobody"},
            {"a": "all"},
            {"c": "small", "d": "none"},
        ]
        for scope in scopes:
            filters = filters_of(MemorySearchQuery(scope=scope))
            counts = _capped_counts_now(db, filters)
            expected = min(range(len(filters)), key=counts.__getitem__)
            assert choose_driver_now(db, filters) == expected, scope
            # The same narrowest pair, or None when even it holds more than the limit.
            full = [len(_seqs(db, pair)) for _, pair in filters]
            for limit in (0, 2, 3, 39, 40, 41, 299, 300, 5_000):
                within = narrowest_within_now(db, filters, limit)
                smallest = min(range(len(full)), key=full.__getitem__)
                assert within == (smallest if full[smallest] <= limit else None), (scope, limit)
    finally:
        db.close()


def _seqs(db: sqlite3.Connection, pair: tuple[str, ...]) -> list[int]:
    rows = db.execute("SELECT record_seq FROM memory_scope WHERE key = ? AND value = ?", pair)
    return [int(row[0]) for row in rows]
