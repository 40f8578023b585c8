"""``observed_at`` in the data contract: validated like the other times, defaulted to
``created_at``, within the clock skew, and kept through JSONL export and import."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from recallstore import (
    InMemoryMemoryStore,
    MemoryRecord,
    MemorySearchQuery,
    MemoryValidationError,
    MemoryWriteInput,
)
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.jsonl import export_jsonl, import_records, read_jsonl
from recallstore.records import MAX_OBSERVED_SKEW
from recallstore.store import record_from_input

_NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
_MONDAY = datetime(2026, 5, 25, 9, 30, tzinfo=UTC)


def test_a_naive_observed_at_is_refused_naming_the_field() -> None:
    with pytest.raises(MemoryValidationError) as caught:
        MemoryWriteInput(scope={"u": "1"}, content="x", observed_at=datetime(2026, 1, 1))
    assert caught.value.field == "observed_at"
    assert "timezone-aware" in caught.value.message


def test_observed_at_is_kept_in_utc() -> None:
    paris = datetime(2026, 5, 25, 11, 30, tzinfo=timezone(timedelta(hours=2)))
    inp = MemoryWriteInput(scope={"u": "1"}, content="x", observed_at=paris)
    assert inp.observed_at == _MONDAY
    assert inp.observed_at is not None
    assert inp.observed_at.tzinfo is UTC


def test_a_record_without_observed_at_takes_its_created_at() -> None:
    record = MemoryRecord(id="r1", scope={"u": "1"}, content="x", created_at=_NOW, updated_at=_NOW)
    assert record.observed_at == _NOW
    legacy = record.model_dump(mode="json")
    del legacy["observed_at"]
    assert MemoryRecord.model_validate(legacy) == record


def test_a_record_observed_after_it_was_saved_is_refused() -> None:
    with pytest.raises(MemoryValidationError) as caught:
        MemoryRecord(
            id="r1",
            scope={"u": "1"},
            content="x",
            created_at=_NOW,
            updated_at=_NOW,
            observed_at=_NOW + MAX_OBSERVED_SKEW + timedelta(seconds=1),
        )
    assert caught.value.field == "observed_at"


def test_record_from_input_saves_a_time_within_the_skew_as_now_and_refuses_beyond() -> None:
    near = MemoryWriteInput(scope={"u": "1"}, content="x", observed_at=_NOW + MAX_OBSERVED_SKEW)
    assert record_from_input(near, record_id="r1", now=_NOW).observed_at == _NOW
    far = near.model_copy(update={"observed_at": _NOW + MAX_OBSERVED_SKEW + timedelta(1)})
    with pytest.raises(MemoryValidationError, match="in the future"):
        record_from_input(far, record_id="r1", now=_NOW)


async def test_a_store_refuses_a_future_observed_at_naming_the_input(tmp_path: Path) -> None:
    async with SqliteMemoryStore(tmp_path / "m.db", clock=lambda: _NOW) as store:
        with pytest.raises(MemoryValidationError) as caught:
            await store.write(
                [
                    MemoryWriteInput(scope={"u": "1"}, content="fine"),
                    MemoryWriteInput(
                        scope={"u": "1"}, content="later", observed_at=_NOW + timedelta(hours=1)
                    ),
                ]
            )
        assert caught.value.field == "inputs[1].observed_at"
        assert await store.search(MemorySearchQuery(include_invalidated=True)) == []


def test_an_empty_observed_window_is_refused() -> None:
    with pytest.raises(MemoryValidationError) as caught:
        MemorySearchQuery(observed_after=_NOW, observed_before=_NOW)
    assert caught.value.field == "observed_before"


async def test_observed_at_survives_jsonl_export_and_import(tmp_path: Path) -> None:
    async with InMemoryMemoryStore() as source:
        written = await source.write(
            [
                MemoryWriteInput(scope={"u": "1"}, content="said monday", observed_at=_MONDAY),
                MemoryWriteInput(scope={"u": "1"}, content="said now"),
            ]
        )
        out = io.StringIO()
        assert await export_jsonl(source, out) == 2
    lines = out.getvalue().splitlines()
    assert json.loads(lines[0])["observed_at"] == "2026-05-25T09:30:00.000000Z"
    records = read_jsonl(lines)
    assert records == written
    async with SqliteMemoryStore(tmp_path / "m.db") as target:
        assert (await import_records(target, records)).inserted == 2
        assert [await target.get(record.id) for record in written] == written


def test_a_line_exported_before_observed_at_existed_imports_with_its_created_at() -> None:
    line = json.dumps(
        {
            "id": "r1",
            "scope": {"u": "1"},
            "content": "old export",
            "created_at": "2024-01-02T03:04:05.000000Z",
            "updated_at": "2024-01-02T03:04:05.000000Z",
        }
    )
    (record,) = read_jsonl([line])
    assert record.observed_at == record.created_at
