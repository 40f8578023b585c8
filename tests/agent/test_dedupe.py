"""No duplicates at write time (issue 27 item 2): an equal save returns the saved memory.

Equal means the same :func:`recallstore.sameness.normal_form`; same scope means exactly
the same scope. The store protocol is unchanged: a direct ``store.write`` still writes.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from recallstore import MemorySearchQuery, MemoryStore, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.context import DUPLICATE_CHECK
from recallstore.events import EventBus, MemoryEvent, MemorySearchData, ObservedMemoryStore
from recallstore.prompt import render_recall
from recallstore.recall import assemble_recall
from recallstore.records import MAX_LIMIT, MemoryRecord
from recallstore.sameness import content_key, normal_form, same_content
from recallstore.toolbox import MemoryToolbox
from recallstore.toolset.save import ALREADY_REMEMBERED

ANA = {"tenant": "acme", "user": "ana"}


async def rows(store: MemoryStore, *, invalid: bool = True) -> list[MemoryRecord]:
    query = MemorySearchQuery(limit=MAX_LIMIT, include_invalidated=invalid, include_expired=True)
    return [hit.record for hit in await store.search(query)]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Lives in Lisbon.", "Lives in Lisbon."),
        ("Lives in Lisbon.", "lives in lisbon"),
        ("Lives in Lisbon.", "  LIVES   in\tLisbon!  "),
        ("Lives in Lisbon.", "Ｌｉｖｅｓ ｉｎ Ｌｉｓｂｏｎ。"),
        ("Wohnt in der Straße", "WOHNT IN DER STRASSE"),
    ],
)
def test_equal_after_case_whitespace_unicode_and_trailing_punctuation(
    first: str, second: str
) -> None:
    assert same_content(first, second)
    assert content_key(first) == content_key(second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Lives in Lisbon.", "Lives in Lisbon?"),
        ("Lives in Lisbon.", "Lived in Lisbon."),
        ("Ana likes tea, not coffee", "Ana likes coffee, not tea"),
        ("Room 12", "Room 1 2"),
    ],
)
def test_different_statements_stay_different(first: str, second: str) -> None:
    assert not same_content(first, second)
    assert normal_form(first) != normal_form(second)


async def test_saving_the_same_sentence_again_writes_nothing_and_says_so(
    store: MemoryStore,
) -> None:
    first = await MemoryToolbox(store, ANA, conversation_id="c1").call(
        "memory_save", {"content": "Lives in Lisbon."}
    )
    again = await MemoryToolbox(store, ANA, conversation_id="c2").call(
        "memory_save", {"content": "lives in  LISBON"}
    )
    assert first["ok"] is True
    assert first["already_remembered"] is False
    assert again["ok"] is True
    assert again["already_remembered"] is True
    assert again["note"] == ALREADY_REMEMBERED
    assert again["memory"]["id"] == first["memory"]["id"]
    assert [r.content for r in await rows(store)] == ["Lives in Lisbon."]


async def test_same_scope_means_exactly_the_same_scope(store: MemoryStore) -> None:
    await store.write([MemoryWriteInput(scope={"tenant": "acme"}, content="Office in Porto.")])
    wider = {**ANA, "device": "phone"}
    await store.write([MemoryWriteInput(scope=wider, content="Office in Porto.")])
    saved = await MemoryToolbox(store, ANA).call("memory_save", {"content": "Office in Porto."})
    assert saved["already_remembered"] is False
    assert len(await rows(store)) == 3


async def test_an_invalidated_equal_memory_does_not_count(store: MemoryStore) -> None:
    box = MemoryToolbox(store, ANA)
    first = await box.call("memory_save", {"content": "Owns a red bike."})
    await box.call("memory_invalidate", {"id": first["memory"]["id"], "reason": "sold it"})
    again = await box.call("memory_save", {"content": "Owns a red bike."})
    assert again["already_remembered"] is False
    assert again["memory"]["id"] != first["memory"]["id"]
    assert len(await rows(store, invalid=False)) == 1


async def test_a_direct_store_write_still_writes(store: MemoryStore) -> None:
    """The protocol is unchanged: S1 returns a new record for every input."""
    entry = MemoryWriteInput(scope=ANA, content="Plays the cello.")
    await store.write([entry])
    await store.write([entry])
    assert len(await rows(store)) == 2


async def test_concurrent_equal_saves_leave_one_row(store: MemoryStore) -> None:
    boxes = [MemoryToolbox(store, ANA, conversation_id=f"c{i}") for i in range(8)]
    results = await asyncio.gather(
        *(box.call("memory_save", {"content": "Speaks Portuguese."}) for box in boxes)
    )
    assert all(result["ok"] for result in results)
    assert len({result["memory"]["id"] for result in results}) == 1
    assert len(await rows(store)) == 1


async def test_concurrent_equal_saves_from_two_sqlite_openers_leave_one_row(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shared.db"
    async with SqliteMemoryStore(path) as one, SqliteMemoryStore(path) as two:
        results = await asyncio.gather(
            *(
                MemoryToolbox(opened, ANA).call("memory_save", {"content": "Has two cats."})
                for opened in (one, two, one, two)
            )
        )
        assert len({result["memory"]["id"] for result in results}) == 1
        assert len(await rows(one)) == 1


async def test_recall_block_shows_each_statement_once(store: MemoryStore) -> None:
    """A store that already holds duplicates (saved before this check) recalls one line."""
    await store.write(
        [
            MemoryWriteInput(scope=ANA, content="Lives in Lisbon.", kind="profile"),
            MemoryWriteInput(scope=ANA, content="Lives in Lisbon."),
            MemoryWriteInput(scope=ANA, content="lives in lisbon"),
            MemoryWriteInput(scope=ANA, content="Works in Lisbon as a nurse."),
        ]
    )
    recall = await assemble_recall(store, ANA, "Where does she live? Lisbon?")
    block = render_recall(recall)
    assert block is not None
    lines = [line for line in block.splitlines() if line.startswith("- [")]
    assert len(lines) == 2
    assert sum("ives in Lisbon." in line for line in lines) == 1
    assert len(recall.entries) == 2


def test_the_already_remembered_result_snapshot(prompt_snapshot: SnapshotAssertion) -> None:
    """The wording a model reads when its save was already remembered."""
    from recallstore.toolset._common import MemoryView
    from recallstore.toolset.save import SaveResult

    view = MemoryView(
        id="01mem", kind="fact", content="Lives in Lisbon.", tags=[], date="2026-05-01"
    )
    result = SaveResult(memory=view, already_remembered=True, note=ALREADY_REMEMBERED)
    assert json.dumps(result.model_dump(mode="json"), indent=2) == prompt_snapshot


async def test_the_saves_own_search_is_named_a_duplicate_check(tmp_path: Path) -> None:
    """The bus's events and the journal (the lens's feed) tell a save's search for an
    equal memory from a search the model asked for."""
    bus = EventBus()
    seen: list[MemoryEvent] = []
    bus.add_listener(seen.append)
    async with SqliteMemoryStore(tmp_path / "memory.db") as sqlite:
        box = MemoryToolbox(ObservedMemoryStore(sqlite, bus), ANA, conversation_id="c1")
        await box.call("memory_save", {"content": "Lives in Lisbon."})
        await box.call("memory_search", {"query": "Lisbon"})
        await sqlite.flush_journal()
        journaled = [
            (entry.envelope["conversation_id"], entry.envelope["data"]["purpose"])
            for entry in await sqlite.read_journal()
            if entry.type == "agent.memory.search"
        ]
    published = [
        (event.conversation_id, event.data.purpose)
        for event in seen
        if isinstance(event.data, MemorySearchData)
    ]
    assert published == journaled == [("c1", DUPLICATE_CHECK), ("c1", None)]
