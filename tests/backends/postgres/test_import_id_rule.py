"""Every bundled backend's import path refuses ids that a store would not generate.

The rule is one function, ``recallstore.store.is_valid_record_id``, applied by
``check_import_batch``; the in-memory, SQLite and Postgres stores all call it before
writing, so no backend can hold an id the dashboard's ``/records/{id}`` cannot open.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from recallstore import InMemoryMemoryStore, MemoryRecord, MemorySearchQuery, MemoryStore
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.errors import MemoryValidationError
from recallstore.store import is_valid_record_id, new_record_id

NOW = datetime(2026, 1, 2, tzinfo=UTC)


def _record(record_id: str, **fields: object) -> MemoryRecord:
    return MemoryRecord(
        id=record_id, scope={"u": "1"}, content="x", created_at=NOW, updated_at=NOW, **fields
    )


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], MemoryStore]:
    if request.param == "memory":
        return InMemoryMemoryStore
    if request.param == "sqlite":
        return lambda: SqliteMemoryStore(tmp_path / "memory.db")
    url = request.getfixturevalue("postgres_url")
    schema = request.getfixturevalue("postgres_schema")
    return lambda: PostgresMemoryStore(url, schema=schema)


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("id", "tenant/acme"),
        ("id", ".."),
        ("id", "a%2Fb"),
        ("id", "a b"),
        ("id", "caf\u00e9"),
        ("id", "a?b#c"),
        ("superseded_by", "x/y"),
    ],
)
async def test_import_refuses_an_id_a_store_would_not_generate_and_writes_nothing(
    make_store: Callable[[], MemoryStore], field: str, bad: str
) -> None:
    good = _record("import-ok_1")
    extra = {"invalid_at": NOW} if field == "superseded_by" else {}
    hostile = (
        _record(bad, **extra) if field == "id" else _record("import-b", superseded_by=bad, **extra)
    )
    async with make_store() as store:
        with pytest.raises(MemoryValidationError) as caught:
            await store.import_records([good, hostile])  # type: ignore[attr-defined]
        assert caught.value.field == f"records[1].{field}"
        assert caught.value.value == bad
        assert await store.search(MemorySearchQuery(include_invalidated=True)) == []
        assert await store.import_records([good]) == 1  # type: ignore[attr-defined]


def test_generated_ids_pass_the_rule() -> None:
    assert all(is_valid_record_id(new_record_id()) for _ in range(10_000))
