"""capture() at the edges (issue 36): tool arguments JSON cannot write, options that are
the wrong type in disguise (a bool is an int, a string is a sequence), and the time keys
message mappings carry."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from recallstore import capture
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.capture import CAPTURE_TAG
from recallstore.errors import MemoryValidationError
from recallstore.records import MemoryRecord, MemorySearchQuery
from recallstore.store import MemoryStore

SCOPE = {"tenant": "acme", "user": "u1"}
HUGE = 10**4400  # past Python's 4,300-digit limit for int -> text


def nested(depth: int, inner: Any = 1) -> Any:
    for _ in range(depth):
        inner = [inner]
    return inner


async def every_record(store: MemoryStore) -> list[MemoryRecord]:
    hits = await store.search(MemorySearchQuery(scope=SCOPE, include_expired=True, limit=1000))
    return [hit.record for hit in hits]


def openai_call(arguments: Any) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return {"role": "assistant", "content": "Let me check.", "tool_calls": [call]}


def anthropic_call(arguments: Any) -> dict[str, Any]:
    use = {"type": "tool_use", "id": "t1", "name": "f", "input": arguments}
    return {"role": "assistant", "content": [{"type": "text", "text": "Let me check."}, use]}


def responses_call(arguments: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": "c1", "name": "f", "arguments": arguments}


def tool_result(result: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": "c1", "output": result}


@pytest.mark.parametrize("shape", [openai_call, anthropic_call, responses_call, tool_result])
@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"n": HUGE}, "holds an integer of more than 4300 digits"),
        ({"n": nested(3000)}, "nested too deeply"),
    ],
    ids=["4400-digit int", "3000 deep"],
)
async def test_arguments_json_cannot_write_are_stored_as_a_note(
    tmp_path: Any, shape: Any, arguments: Any, why: str
) -> None:
    transcript = [{"role": "user", "content": "Check it."}, shape(arguments)]
    async with SqliteMemoryStore(tmp_path / "m.db") as store:
        # Tool calls skipped (the default): the conversation is captured as ever.
        skipped = await capture(store, SCOPE, transcript, conversation_id="c")
        assert skipped.records[0].content == "user: Check it."
        kept = await capture(store, SCOPE, transcript, conversation_id="c", tool_calls="text")
        notes = [
            r.content for r in kept.records if f"<not written out as JSON: {why}>" in r.content
        ]
        assert len(notes) == 1, [r.content[:120] for r in kept.records]
        assert len(notes[0]) < 200
        again = await capture(store, SCOPE, transcript, conversation_id="c", tool_calls="text")
        assert again.added == 0  # the note is the same each time: still idempotent


async def test_tool_results_nested_thousands_deep_are_a_clear_error() -> None:
    inner: Any = {"type": "text", "text": "deep"}
    for _ in range(3000):
        inner = {"type": "tool_result", "tool_use_id": "t", "content": [inner]}
    transcript = [{"role": "user", "content": "hi"}, {"role": "user", "content": [inner]}]
    async with InMemoryMemoryStore() as store:
        with pytest.raises(MemoryValidationError) as caught:
            await capture(store, SCOPE, transcript, conversation_id="c", tool_calls="text")
        assert caught.value.field == "transcript[1]"
        assert "nested too deeply" in caught.value.message
        assert await every_record(store) == []


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"max_chunk_chars": True}, "max_chunk_chars"),  # a bool is an int to Python
        ({"max_chunk_chars": False}, "max_chunk_chars"),
        ({"tags": "abc"}, "tags"),  # not the tags a, b and c
        ({"tags": ["ok", 3]}, "tags"),
        ({"tags": [" "]}, "tags"),
        ({"tags": None}, "tags"),
    ],
)
async def test_options_of_the_wrong_type_in_disguise_are_refused(
    options: dict[str, Any], field: str
) -> None:
    async with InMemoryMemoryStore() as store:
        with pytest.raises(MemoryValidationError) as caught:
            await capture(store, SCOPE, [("user", "hello there")], conversation_id="c", **options)
        assert caught.value.field == field
        assert caught.value.value == next(iter(options.values()))
        assert await every_record(store) == []


async def test_tags_given_as_a_list_still_work() -> None:
    async with InMemoryMemoryStore() as store:
        result = await capture(
            store, SCOPE, [("user", "hello")], conversation_id="c", tags=["trip", "2026"]
        )
        assert set(result.records[0].tags) == {CAPTURE_TAG, "trip", "2026"}


WHEN = datetime(2024, 3, 9, 17, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    "given",
    [
        {"time": "2024-03-09T17:30:00Z"},
        {"timestamp": WHEN.timestamp()},  # ADK's Event.timestamp, as a dict
        {"timestamp": "2024-03-09T18:30:00+01:00"},
        {"created_at": int(WHEN.timestamp())},  # OpenAI Assistants' thread messages
        {"createdAt": "2024-03-09T17:30:00.000Z"},  # the Vercel AI SDK's messages
        {"timestamp": "2024-03-09T17:30:00Z", "created_at": WHEN.timestamp()},  # agree
    ],
)
async def test_a_message_mapping_time_is_read_from_the_common_keys(given: dict[str, Any]) -> None:
    async with InMemoryMemoryStore() as store:
        message = {"role": "user", "content": "I moved to Lisbon.", **given}
        (record,) = (await capture(store, SCOPE, [message], conversation_id="c")).records
        assert record.observed_at == WHEN


async def test_two_time_keys_that_disagree_are_refused_naming_both() -> None:
    async with InMemoryMemoryStore() as store:
        message = {
            "role": "user",
            "content": "hi",
            "timestamp": "2024-03-09T17:30:00Z",
            "created_at": "2020-01-01T00:00:00Z",
        }
        with pytest.raises(MemoryValidationError) as caught:
            await capture(store, SCOPE, [message], conversation_id="c")
        assert caught.value.field == "transcript[0].time"
        assert caught.value.value == {
            "timestamp": "2024-03-09T17:30:00Z",
            "created_at": "2020-01-01T00:00:00Z",
        }
        assert await every_record(store) == []
