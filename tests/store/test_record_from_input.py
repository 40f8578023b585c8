"""``record_from_input`` assembles a record without validating it again: the same record."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from recallstore import MemoryRecord, MemoryValidationError, MemoryWriteInput
from recallstore.store import record_from_input


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
