"""The data contract validates once, at the edge, and names the offending field."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from recallstore import MemorySearchQuery, MemoryValidationError, MemoryWriteInput
from recallstore.records import (
    MAX_CONTENT_CHARS,
    MemoryRecord,
    format_timestamp,
    parse_scope_pairs,
)


@pytest.mark.parametrize(
    ("fields", "field_name"),
    [
        ({"scope": {}, "content": "   "}, "content"),
        ({"scope": {}, "content": "x" * (MAX_CONTENT_CHARS + 1)}, "content"),
        ({"scope": {}, "content": "x", "kind": "opinion"}, "kind"),
        ({"scope": {"user": 42}, "content": "x"}, "scope"),
        ({"scope": {"": "u1"}, "content": "x"}, "scope"),
        ({"scope": {}, "content": "x", "tags": ["  "]}, "tags"),
        ({"scope": {}, "content": "x", "expires_at": datetime(2030, 1, 1)}, "expires_at"),
        ({"scope": {}, "content": "x", "colour": "red"}, "colour"),
    ],
)
def test_invalid_write_input_names_the_field(fields: dict[str, object], field_name: str) -> None:
    with pytest.raises(MemoryValidationError) as caught:
        MemoryWriteInput(**fields)
    assert caught.value.field == field_name


def test_scope_is_canonical_and_tags_are_normalised() -> None:
    inp = MemoryWriteInput(
        scope={"user": "u1", "tenant": "acme"}, content=" x ", tags=["b", " a", "b"]
    )
    assert list(inp.scope) == ["tenant", "user"]
    assert inp.tags == ("a", "b")
    assert inp.content == "x"


@pytest.mark.parametrize("limit", [-1, 1001])
def test_limit_out_of_range_is_refused(limit: int) -> None:
    with pytest.raises(MemoryValidationError) as caught:
        MemorySearchQuery(limit=limit)
    assert caught.value.field == "limit"


def test_timestamps_serialise_in_utc_with_microseconds() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 60, tzinfo=UTC)
    inp = MemoryWriteInput(scope={}, content="x", expires_at=moment)
    assert inp.model_dump(mode="json")["expires_at"] == "2026-01-02T03:04:05.000060Z"


def test_model_validate_names_the_field_like_the_constructor() -> None:
    with pytest.raises(MemoryValidationError) as caught:
        MemoryWriteInput.model_validate({"scope": {}, "content": "   "})
    assert caught.value.field == "content"


def test_nested_model_errors_carry_the_full_path() -> None:
    with pytest.raises(MemoryValidationError) as caught:
        MemoryWriteInput.model_validate(
            {"scope": {}, "content": "x", "provenance": {"conversation_id": "c" * 1000}}
        )
    assert caught.value.field == "provenance.conversation_id"


@pytest.mark.parametrize(
    ("fields", "field_name"),
    [
        ({"id": "a\x00"}, "id"),
        (
            {"superseded_by": "b\x00", "invalid_at": datetime(2026, 1, 1, tzinfo=UTC)},
            "superseded_by",
        ),
        (
            {"invalid_reason": "\ud800", "invalid_at": datetime(2026, 1, 1, tzinfo=UTC)},
            "invalid_reason",
        ),
        # The path to the offending value; a lone surrogate in a key is shown escaped.
        ({"payload": {"deep": [{"x": "a\x00"}]}}, "payload.deep.0.x"),
        ({"payload": {"\udfff": 1}}, "payload.\\udfff"),
        ({"provenance": {"author": "\x00"}}, "provenance.author"),
        ({"content": "tea \ud83c"}, "content"),
    ],
)
def test_strings_no_backend_can_store_are_refused_in_records(
    fields: dict[str, object], field_name: str
) -> None:
    # Records also arrive from JSONL imports; Postgres text and jsonb hold neither NUL nor
    # lone surrogates, so the contract refuses them for every backend.
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    base: dict[str, object] = {"id": "r1", "scope": {}, "content": "x"}
    with pytest.raises(MemoryValidationError) as caught:
        MemoryRecord.model_validate({**base, "created_at": moment, "updated_at": moment, **fields})
    assert caught.value.field == field_name


def test_payload_with_ordinary_unicode_is_accepted() -> None:
    payload = {"café": ["東京", "🙂", 1, 2.5, None, True], "nested": {"k": "v"}}
    assert MemoryWriteInput(scope={}, content="x", payload=payload).payload == payload


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        (["user=u1", "tenant=acme"], {"tenant": "acme", "user": "u1"}),
        (["note=a=b", "user=u1", "user=u1"], {"note": "a=b", "user": "u1"}),
        (["user= u1 "], {"user": " u1 "}),
        ([], {}),
    ],
)
def test_scope_pairs_parse_exactly_and_canonically(
    pairs: list[str], expected: dict[str, str]
) -> None:
    scope = parse_scope_pairs(pairs)
    assert scope == expected
    assert list(scope) == sorted(expected)


@pytest.mark.parametrize(
    ("pairs", "words"),
    [
        (["user"], "expects key=value, got 'user'"),
        (["=u1"], "expects key=value, got '=u1'"),
        (["user=a", "user=b"], "twice"),
        (["user=a\x00b"], "NUL"),
    ],
)
def test_bad_scope_pairs_name_the_scope_field(pairs: list[str], words: str) -> None:
    with pytest.raises(MemoryValidationError) as caught:
        parse_scope_pairs(pairs)
    assert caught.value.field == "scope"
    assert words in caught.value.message


def test_status_words() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    base = MemoryRecord(
        id="r1", scope={"user": "u_42"}, content="x", created_at=now, updated_at=now
    )
    assert base.status(now) == "valid"
    expired = base.model_copy(update={"expires_at": now - timedelta(seconds=1)})
    assert expired.status(now) == "expired"
    invalid = expired.model_copy(update={"invalid_at": now})
    assert invalid.status(now) == "invalidated"
    superseded = invalid.model_copy(update={"superseded_by": "r2"})
    assert superseded.status(now) == "superseded"


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2027, 1, 1, 0, 0, 0, 0, tzinfo=UTC),  # the next second, once cached
        datetime(2026, 12, 31, 23, 59, 59, 5, tzinfo=UTC),  # the first second again
        datetime(1000, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2026, 6, 1, 2, 0, 0, 42, tzinfo=timezone(timedelta(hours=2))),
        datetime(999, 12, 31, 23, 59, 59, tzinfo=UTC),
    ],
)
def test_a_timestamp_is_written_as_strftime_writes_it_in_utc(moment: datetime) -> None:
    expected = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert format_timestamp(moment) == expected
    assert format_timestamp(moment) == expected  # and again, from the cached second
