"""``memory_prompt``: the turn-1 memory part of a system prompt, pinned with the plugin.

It must be the very text ``MemoryCapability.instantiate`` gives a conversation, and with
the plugin's frozen clock and deterministic ids the same writes must render the same
bytes through the in-memory store and a real SQLite file.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from recallstore import (
    ConfigurationError,
    InMemoryMemoryStore,
    MemoryStore,
    MemoryValidationError,
    MemoryWriteInput,
    SqliteMemoryStore,
    memory_prompt,
)
from recallstore.capability import MemoryCapability
from recallstore.prompt import RECALL_OPEN, Manual
from recallstore.testing.pytest_plugin import FrozenClock

ANA = {"tenant": "acme", "user": "ana"}
FIRST_MESSAGE = "Any snack ideas for me in Lisbon? Mind the peanuts."


async def remember_ana(store: MemoryStore, clock: FrozenClock | None = None) -> None:
    """The same writes, on three days when a clock is given."""
    await store.write(
        [
            MemoryWriteInput(scope=ANA, kind="profile", content="The user's name is Ana."),
            MemoryWriteInput(scope=ANA, content="Ana is allergic to peanuts."),
        ]
    )
    if clock is not None:
        clock.advance(timedelta(days=3))
    [berlin] = await store.write([MemoryWriteInput(scope=ANA, content="Ana lives in Berlin.")])
    if clock is not None:
        clock.advance(timedelta(days=40))
    await store.write(
        [
            MemoryWriteInput(
                scope=ANA,
                content="Ana lives in Lisbon (she moved from Berlin).",
                supersedes=berlin.id,
            ),
            MemoryWriteInput(scope={"tenant": "acme", "user": "bo"}, content="Bo lives in Lisbon."),
        ]
    )


async def instructions(store: MemoryStore, text: str, **options: Any) -> str:
    capability = MemoryCapability(store, scope_fields=("tenant", "user"), **options)
    memory = await capability.instantiate(
        {**ANA, "locale": "pt"}, conversation_id="c1", first_user_text=text
    )
    return memory.instructions


@pytest.mark.parametrize(
    "options", [{}, {"budget_chars": 30}, {"recall_limit": 0, "profile_limit": 0}]
)
async def test_memory_prompt_is_what_instantiate_gives(
    store: MemoryStore, options: dict[str, Any]
) -> None:
    assert await memory_prompt(store, ANA, FIRST_MESSAGE, **options) == Manual.render()
    await remember_ana(store)
    for text in (FIRST_MESSAGE, "", "nothing matches this"):
        expected = await instructions(store, text, **options)
        assert await memory_prompt(store, ANA, text, **options) == expected
    text = await memory_prompt(store, ANA, FIRST_MESSAGE, **options)
    assert text.startswith(Manual.render())
    assert ("Bo lives" in text) is False
    assert (f"\n\n{RECALL_OPEN}\n" in text) is (options.get("profile_limit") != 0)


async def test_an_unscoped_memory_prompt_is_refused(store: MemoryStore) -> None:
    with pytest.raises(ConfigurationError, match="non-empty scope"):
        await memory_prompt(store, {}, FIRST_MESSAGE)


async def test_a_bad_scope_is_refused_naming_it(store: MemoryStore) -> None:
    with pytest.raises(ConfigurationError, match="'user'"):
        await memory_prompt(store, {"tenant": "acme", "user": " "}, FIRST_MESSAGE)
    with pytest.raises(MemoryValidationError, match="scope"):
        await memory_prompt(store, {"": "acme"}, FIRST_MESSAGE)


async def test_recall_block_is_the_same_through_sqlite_and_memory(
    memory_store: InMemoryMemoryStore,
    sqlite_memory_store: SqliteMemoryStore,
    memory_clock: FrozenClock,
    prompt_snapshot: SnapshotAssertion,
) -> None:
    blocks = []
    for store in (memory_store, sqlite_memory_store):
        memory_clock.set(FrozenClock()())
        await remember_ana(store, memory_clock)
        capability = MemoryCapability(store, scope_fields=("tenant", "user"))
        memory = await capability.instantiate(
            ANA, conversation_id="c1", first_user_text=FIRST_MESSAGE
        )
        blocks.append(memory.recall_block)
    assert blocks[0] is not None
    assert blocks[1] == blocks[0]
    assert "- [m1 2026-01-15] The user's name is Ana." in blocks[0]
    assert "- [m3 2026-02-27] Ana lives in Lisbon" in blocks[0]  # written 43 days later
    assert blocks[0] == prompt_snapshot


async def test_whole_memory_prompt_snapshot(
    sqlite_memory_store: SqliteMemoryStore,
    memory_clock: FrozenClock,
    prompt_snapshot: SnapshotAssertion,
) -> None:
    await remember_ana(sqlite_memory_store, memory_clock)
    text = await memory_prompt(sqlite_memory_store, ANA, FIRST_MESSAGE)
    assert f"You are a travel assistant.\n\n{text}" == prompt_snapshot


async def test_the_stores_are_fresh_and_frozen(
    memory_store: InMemoryMemoryStore, memory_clock: FrozenClock
) -> None:
    [first] = await memory_store.write([MemoryWriteInput(scope=ANA, content="x")])
    assert first.created_at == memory_clock()
    with pytest.raises(TypeError, match="timedelta"):
        memory_clock.advance(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timezone-aware"):
        FrozenClock(first.created_at.replace(tzinfo=None))
