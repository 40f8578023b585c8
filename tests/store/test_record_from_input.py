"""``record_from_input`` assembles a record without validating it again: the same record."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from recallstore import MemoryRecord, MemoryValidationError, MemoryWriteInput
from recallstore.store import NewRecords, record_from_input, records_from_inputs


def test_the_assembled_record_equals_the_validated_one() -> None:
    inp = MemoryWriteInput(
        scope={"user": "u1", "tenant": "acme"},
        kind="preference",
        content="  likes tea  ",
        tags=["b", " a", "b"],
        provenance={"conversation_id": "c1", "author": "agent"},
        expires_at=datetime(2030, 1, 1, tzinfo=UTC),
        target={"section": "profile", "key": "drink"},
        payload={"drink": ["tea", {"sugar": False}]},
        supports=[{"run_id": "r1"}],
        supersedes="older",
    )
    now = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    built = record_from_input(inp, record_id="rec-1", now=now)
    validated = MemoryRecord.model_validate(
        {
            **inp.model_dump(exclude={"supersedes"}),
            "id": "rec-1",
            "created_at": now,
            "updated_at": now,
        }
    )
    assert built == validated
    assert built.model_dump(mode="json") == validated.model_dump(mode="json")
    assert repr(built) == repr(validated)
    assert built.model_fields_set == validated.model_fields_set
    # The record owns its containers: the input's cannot change it afterwards.
    assert built.scope is not inp.scope
    assert built.payload is not inp.payload
    payload = inp.payload
    assert isinstance(payload, dict)
    drinks = payload["drink"]
    assert isinstance(drinks, list)
    drinks.append("coffee")
    assert built.payload == {"drink": ["tea", {"sugar": False}]}


def test_an_id_or_time_no_store_would_hand_in_takes_the_validating_path() -> None:
    inp = MemoryWriteInput(scope={}, content="x")
    local = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    record = record_from_input(inp, record_id="rec-1", now=local)
    assert record.created_at == local
    assert record.created_at.utcoffset() == timedelta(0)
    with pytest.raises(MemoryValidationError) as caught:
        record_from_input(inp, record_id="", now=datetime(2026, 1, 1, tzinfo=UTC))
    assert caught.value.field == "id"


def test_a_batch_gives_the_records_one_by_one_would() -> None:
    inputs = [
        MemoryWriteInput(scope={"user": "u1"}, content="plain"),
        MemoryWriteInput(scope={"user": "u2"}, content="kept", payload=[1, {"a": None}]),
        MemoryWriteInput(scope={}, content="keyed", idempotency_key="k"),
    ]
    ids = ["a", "b-2", "c_3"]
    start = datetime(2026, 5, 6, 7, 8, 9, 999_999, tzinfo=UTC)
    stamps = [start + timedelta(microseconds=n) for n in range(3)]
    built = records_from_inputs(inputs, ids, stamps)
    one_by_one = [
        record_from_input(inp, record_id=record_id, now=now)
        for inp, record_id, now in zip(inputs, ids, stamps, strict=True)
    ]
    assert built == one_by_one
    assert [record.model_fields_set for record in built] == [
        record.model_fields_set for record in one_by_one
    ]
    assert built[1].payload is not inputs[1].payload


def test_a_batch_with_a_stamp_or_id_no_store_would_hand_in_is_validated() -> None:
    inputs = [MemoryWriteInput(scope={}, content=f"note {n}") for n in range(2)]
    utc = datetime(2026, 1, 1, 10, tzinfo=UTC)
    local = datetime(2026, 1, 1, 12, 0, 0, 1, tzinfo=timezone(timedelta(hours=2)))
    records = records_from_inputs(inputs, ["a", "b"], [utc, local])
    assert [record.created_at.tzinfo for record in records] == [UTC, UTC]
    assert records[1].created_at == local
    with pytest.raises(MemoryValidationError) as caught:
        records_from_inputs(inputs, ["a", ""], [utc, utc])
    assert caught.value.field == "id"
    with pytest.raises(MemoryValidationError, match="created_at"):
        records_from_inputs(inputs, ["a", "b"], [utc, datetime(999, 1, 1, tzinfo=UTC)])


def test_a_batch_needs_an_id_and_a_stamp_per_input() -> None:
    inputs = [MemoryWriteInput(scope={}, content="x")]
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="1 inputs, 2 ids, 1 stamps"):
        records_from_inputs(inputs, ["a", "b"], [now])


def test_new_records_are_built_once_from_what_the_batch_holds() -> None:
    inputs = [MemoryWriteInput(scope={"user": f"u{n}"}, content=f"note {n}") for n in range(3)]
    start = datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)
    stamps = [start + timedelta(microseconds=n) for n in range(3)]
    batch = NewRecords(inputs, ["a", "b", "c"], stamps)
    assert not batch.built
    records = batch.records()
    assert batch.built
    assert batch.records() is records
    assert [record.id for record in records] == list(batch.ids) == ["a", "b", "c"]
    assert [record.created_at for record in records] == list(batch.stamps) == stamps
    assert [record.content for record in records] == [inp.content for inp in batch.inputs]


def test_new_records_a_store_would_not_hand_in_are_built_and_checked_at_once() -> None:
    # Nothing is left to fail after the batch's rows went in: a stamp to normalise is
    # normalised, and an unusable id is refused, when the batch is made.
    inputs = [MemoryWriteInput(scope={}, content=f"note {n}") for n in range(2)]
    utc = datetime(2026, 1, 1, 10, tzinfo=UTC)
    local = datetime(2026, 1, 1, 12, 0, 0, 1, tzinfo=timezone(timedelta(hours=2)))
    batch = NewRecords(inputs, ["a", "b"], [utc, local])
    assert batch.built
    assert [stamp.tzinfo for stamp in batch.stamps] == [UTC, UTC]
    assert list(batch.stamps) == [record.created_at for record in batch.records()]
    with pytest.raises(MemoryValidationError) as caught:
        NewRecords(inputs, ["a", ""], [utc, utc])
    assert caught.value.field == "id"
