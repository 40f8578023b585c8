"""Records rebuilt from the Postgres backend's rows without re-validation equal validated
ones, field by field and type by type, whatever the session's time zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.postgres.rows import (
    COLUMN_NAMES,
    COLUMNS,
    TEXT_COLUMNS,
    record_from,
    record_from_text,
)
from recallstore.records import MemoryRecord, MemoryTarget, Provenance

NOW = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)

RECORDS = [
    MemoryRecord(id="m1", scope={"user": "u1"}, content="plain", created_at=NOW, updated_at=NOW),
    MemoryRecord(
        id="m2",
        scope={"user": "Ünï 用户", "tenant": 't"1', "a_much_longer_key": "v"},
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
        observed_at=NOW - timedelta(days=400),
    ),
    MemoryRecord(
        id="m3",
        scope={},
        content="with a payload",
        payload={"x": [1, 2.5, None, "s", {"y": True}]},
        created_at=NOW,
        updated_at=NOW,
    ),
]


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/St_Johns"])
async def test_rows_rebuild_the_records_validation_would(
    postgres_url: str, postgres_schema: str, zone: str
) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema, journal=None) as store:
        assert await store.import_records(RECORDS) == len(RECORDS)
        assert [await store.get(record.id) for record in RECORDS] == RECORDS
    conninfo = f"{postgres_url}?options=-c%20TimeZone%3D{zone.replace('/', '%2F')}"
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM {postgres_schema}.memory_records ORDER BY id"
        ).fetchall()
        # What a keyword search reads its candidates as (JSON decoded for winners only).
        texts = conn.execute(
            f"SELECT {TEXT_COLUMNS} FROM {postgres_schema}.memory_records ORDER BY id"
        ).fetchall()
    assert len(rows) == len(RECORDS)
    assert [record_from_text(row) for row in texts] == RECORDS
    for row, original in zip(rows, RECORDS, strict=True):
        fast = record_from(row)
        validated = MemoryRecord.model_validate(dict(zip(COLUMN_NAMES, row, strict=True)))
        assert fast == validated == original
        assert fast.model_fields_set == validated.model_fields_set
        for name in MemoryRecord.model_fields:
            mine: Any = getattr(fast, name)
            theirs: Any = getattr(validated, name)
            assert type(mine) is type(theirs), name
            assert list(mine) == list(theirs) if isinstance(mine, dict) else mine == theirs
            if isinstance(mine, datetime):
                assert mine.tzinfo is UTC, name
                assert theirs.tzinfo is UTC, name
