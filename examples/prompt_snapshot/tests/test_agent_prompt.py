"""Snapshot-test the prompts an agent with memory starts from.

``memory_store``, ``sqlite_memory_store``, ``memory_clock`` and ``prompt_snapshot`` come
from recallstore's pytest plugin (installed with ``recallstore[testing]``). The stores
have a frozen clock and deterministic ids, so the same writes give the same prompt,
byte for byte, on every machine. Run ``pytest`` in this folder; after an intended
change, ``pytest --snapshot-update`` and review the diff of ``snapshots/``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from syrupy.assertion import SnapshotAssertion

from agent import build_system_prompt, memory_scope
from recallstore import InMemoryMemoryStore, MemoryStore, MemoryToolbox, MemoryWriteInput
from recallstore.testing.pytest_plugin import FrozenClock

ANA = memory_scope("ana")


@pytest.mark.asyncio
async def test_returning_user(
    sqlite_memory_store: MemoryStore, memory_clock: FrozenClock, prompt_snapshot: SnapshotAssertion
) -> None:
    # What earlier conversations saved, on the days they saved it.
    await sqlite_memory_store.write(
        [
            MemoryWriteInput(scope=ANA, kind="profile", content="The user's name is Ana."),
            MemoryWriteInput(scope=ANA, kind="preference", content="Ana prefers night trains."),
        ]
    )
    memory_clock.advance(timedelta(days=9))
    [old_home] = await sqlite_memory_store.write(
        [MemoryWriteInput(scope=ANA, content="Ana lives in Berlin.")]
    )
    memory_clock.advance(timedelta(days=30))
    await sqlite_memory_store.write(
        [
            MemoryWriteInput(
                scope=ANA,
                content="Ana lives in Lisbon; she moved from Berlin.",
                supersedes=old_home.id,
            )
        ]
    )

    prompt = await build_system_prompt(
        sqlite_memory_store, user_id="ana", first_message="Plan me a trip from Lisbon by train."
    )
    assert prompt == prompt_snapshot


@pytest.mark.asyncio
async def test_new_user(memory_store: MemoryStore, prompt_snapshot: SnapshotAssertion) -> None:
    prompt = await build_system_prompt(memory_store, user_id="bo", first_message="Hi!")
    assert prompt == prompt_snapshot


def test_tool_schemas(prompt_snapshot: SnapshotAssertion) -> None:
    toolbox = MemoryToolbox(InMemoryMemoryStore(), ANA)
    assert toolbox.anthropic_tools() == prompt_snapshot
