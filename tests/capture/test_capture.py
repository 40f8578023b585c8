"""capture(): verbatim episodes, once per conversation and message, on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from recallstore import capture
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.capture import CAPTURE_TAG, split_text
from recallstore.errors import ConfigurationError, MemoryValidationError
from recallstore.events import EventBus, MemoryEvent, ObservedMemoryStore
from recallstore.records import MemoryRecord, MemorySearchQuery
from recallstore.store import MemoryStore

SCOPE = {"tenant": "acme", "user": "u1"}
DAY = datetime(2026, 5, 8, 13, 56, tzinfo=UTC)


def talk(count: int) -> list[tuple[str, str, datetime]]:
    """``count`` alternating user and assistant messages, a minute apart."""
    return [
        (
            "user" if n % 2 == 0 else "assistant",
            f"Message number {n} about topic {n * 7 % 13}.",
            DAY + timedelta(minutes=n),
        )
        for n in range(count)
    ]


async def every_record(store: MemoryStore, scope: dict[str, str] = SCOPE) -> list[MemoryRecord]:
    hits = await store.search(
        MemorySearchQuery(scope=scope, include_invalidated=True, include_expired=True, limit=1000)
    )
    return [hit.record for hit in hits]


async def test_the_same_or_a_longer_transcript_adds_only_new_messages(any_store) -> None:
    first = await capture(any_store, SCOPE, talk(6), conversation_id="c-1")
    assert (first.messages, first.kept, first.added, len(first.records)) == (6, 6, 6, 6)
    again = await capture(any_store, SCOPE, talk(6), conversation_id="c-1")
    assert again.added == 0
    assert [r.id for r in again.records] == [r.id for r in first.records]
    longer = await capture(any_store, SCOPE, talk(9), conversation_id="c-1")
    assert longer.added == 3
    assert [r.id for r in longer.records[:6]] == [r.id for r in first.records]
    records = await every_record(any_store)
    assert len(records) == 9
    assert not any(record.is_invalidated for record in records)
    # Another conversation saying the same things is another set of episodes.
    other = await capture(any_store, SCOPE, talk(2), conversation_id="c-2")
    assert other.added == 2
    assert len(await every_record(any_store)) == 11


async def test_records_are_verbatim_episodes_with_provenance_and_observed_time(any_store) -> None:
    result = await capture(any_store, SCOPE, talk(2), conversation_id="c-1")
    user, assistant = result.records
    assert user.content == "user: Message number 0 about topic 0."
    assert assistant.content == "assistant: Message number 1 about topic 7."
    assert user.kind == "episode"
    assert user.tags == (CAPTURE_TAG,)
    assert user.scope == SCOPE
    assert user.observed_at == DAY
    assert assistant.observed_at == DAY + timedelta(minutes=1)
    assert user.provenance is not None
    assert assistant.provenance is not None
    assert user.provenance.conversation_id == "c-1"
    assert (user.provenance.author, assistant.provenance.author) == ("user", "assistant")
    assert user.payload == {
        "conversation_id": "c-1",
        "message": 0,
        "part": 0,
        "role": "user",
        "chunk": 0,
        "chunks": 1,
    }
    hits = await any_store.search(MemorySearchQuery(query="topic 7", scope=SCOPE))
    assert hits[0].record.id == assistant.id


async def test_a_changed_message_is_added_and_the_old_one_stays_valid(any_store) -> None:
    said = [("user", "I live in Porto.", DAY)]
    await capture(any_store, SCOPE, said, conversation_id="c-1")
    edited = await capture(
        any_store, SCOPE, [("user", "I live in Lisbon.", DAY)], conversation_id="c-1"
    )
    assert edited.added == 1
    records = await every_record(any_store)
    assert sorted(r.content for r in records) == [
        "user: I live in Lisbon.",
        "user: I live in Porto.",
    ]
    assert not any(record.is_invalidated for record in records)


async def test_a_long_message_becomes_linked_chunks_cut_between_sentences(any_store) -> None:
    sentences = [f"Sentence {n} says something about the trip to Lisbon." for n in range(80)]
    text = " ".join(sentences)
    result = await capture(
        any_store,
        SCOPE,
        [("user", text, DAY), ("assistant", "Noted.", DAY)],
        conversation_id="c-1",
        max_chunk_chars=500,
    )
    *chunks, reply = result.records
    assert len(chunks) == len(split_text(text, 500)) > 1
    assert all(len(r.content) <= len("user: ") + 500 for r in chunks)
    assert " ".join(r.content.removeprefix("user: ") for r in chunks) == text
    assert all(r.content.removeprefix("user: ").endswith(".") for r in chunks)
    for number, record in enumerate(chunks):
        assert isinstance(record.payload, dict)
        assert record.payload["message"] == 0
        assert (record.payload["chunk"], record.payload["chunks"]) == (number, len(chunks))
    assert isinstance(reply.payload, dict)
    assert reply.payload["message"] == 1
    again = await capture(
        any_store, SCOPE, [("user", text, DAY)], conversation_id="c-1", max_chunk_chars=500
    )
    assert again.added == 0


def test_split_text_cuts_sentences_then_words_then_characters() -> None:
    assert split_text("Short.", 100) == ["Short."]
    assert split_text("One two. Three four! Five?", 10) == ["One two.", "Three", "four!", "Five?"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    assert split_text("Para one\n\nPara two", 12) == ["Para one", "Para two"]


OPENAI_CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": [{"type": "text", "text": "Book Lisbon."}, {"type": "image_url"}]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "t1",
                "type": "function",
                "function": {"name": "book", "arguments": '{"to": "LIS"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "t1", "content": "booked"},
    {"role": "assistant", "content": "Booked for you.", "name": "agent_smith"},
]


async def test_roles_and_tool_calls_are_options_with_defaults(any_store) -> None:
    default = await capture(any_store, SCOPE, OPENAI_CHAT, conversation_id="default")
    assert [r.content for r in default.records] == [
        "user: Book Lisbon.",
        "agent_smith: Booked for you.",
    ]
    assert (default.messages, default.kept) == (5, 2)
    everything = await capture(
        any_store,
        SCOPE,
        OPENAI_CHAT,
        conversation_id="all",
        roles=("user", "assistant", "system"),
        tool_calls="text",
        label=False,
        tags=("trip",),
    )
    assert [r.content for r in everything.records] == [
        "You are a travel agent.",
        "Book Lisbon.",
        'book({"to": "LIS"})',
        "booked",
        "Booked for you.",
    ]
    tool_call = everything.records[2]
    assert isinstance(tool_call.payload, dict)
    assert tool_call.payload["tool"] is True
    assert set(everything.records[0].tags) == {CAPTURE_TAG, "trip"}


async def test_anthropic_blocks_and_responses_items() -> None:
    async with InMemoryMemoryStore() as store:
        anthropic = [
            {"role": "user", "content": "Where do I live?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {
                        "type": "tool_use",
                        "id": "tu1",
                        "name": "memory_search",
                        "input": {"query": "live"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu1",
                        "content": [{"type": "text", "text": "Lisbon"}],
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "In Lisbon."}]},
        ]
        result = await capture(store, SCOPE, anthropic, conversation_id="a", tool_calls="text")
        assert [r.content for r in result.records] == [
            "user: Where do I live?",
            "assistant: Let me look.",
            'assistant: memory_search({"query": "live"})',
            "tool: Lisbon",
            "assistant: In Lisbon.",
        ]
        responses = [
            {"role": "user", "content": "Hi"},
            {"type": "reasoning", "summary": []},
            {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"},
            {"type": "function_call_output", "call_id": "c", "output": "done"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello"}],
            },
        ]
        result = await capture(store, SCOPE, responses, conversation_id="r")
        assert [r.content for r in result.records] == ["user: Hi", "assistant: Hello"]


@pytest.mark.parametrize(
    ("transcript", "field"),
    [
        ([("user", "ok", DAY), ("wizard", "hi")], "transcript[1].role"),
        ([("user", "naive time", datetime(2026, 5, 8))], "transcript[0].time"),
        ([("user", "bad", "yesterday")], "transcript[0].time"),
        ([("user", "nul \x00 here")], "transcript[0].content"),
        ([{"content": "no role"}], "transcript[0]"),
        ([42], "transcript[0]"),
        ([("user",)], "transcript[0]"),
    ],
)
async def test_bad_input_names_the_item_and_writes_nothing(
    transcript: list[Any], field: str
) -> None:
    async with InMemoryMemoryStore() as store:
        with pytest.raises(MemoryValidationError) as caught:
            await capture(store, SCOPE, transcript, conversation_id="c-1")
        assert caught.value.field == field
        assert await every_record(store) == []


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"conversation_id": " "}, "conversation_id"),
        ({"conversation_id": "c", "roles": "user"}, "roles"),
        ({"conversation_id": "c", "tool_calls": "keep"}, "tool_calls"),
        ({"conversation_id": "c", "max_chunk_chars": 0}, "max_chunk_chars"),
    ],
)
async def test_bad_options_are_refused(options: dict[str, Any], field: str) -> None:
    async with InMemoryMemoryStore() as store:
        with pytest.raises(MemoryValidationError) as caught:
            await capture(store, SCOPE, talk(1), **options)
        assert caught.value.field == field


async def test_a_store_without_idempotency_is_refused() -> None:
    class Plain(InMemoryMemoryStore):
        extensions = frozenset()

    async with Plain() as store:
        with pytest.raises(ConfigurationError, match="idempotency"):
            await capture(store, SCOPE, talk(1), conversation_id="c-1")


async def test_one_write_event_per_capture_call() -> None:
    bus = EventBus()
    seen: list[MemoryEvent] = []
    bus.add_listener(seen.append)
    async with ObservedMemoryStore(InMemoryMemoryStore(), bus) as store:
        sentences = " ".join(f"Sentence {n} of a long message." for n in range(200))
        await capture(store, SCOPE, [*talk(40), ("user", sentences, DAY)], conversation_id="c-1")
        await capture(store, SCOPE, talk(50), conversation_id="c-1")
    writes = [event for event in seen if event.type == "agent.memory.write"]
    assert len(writes) == 2
