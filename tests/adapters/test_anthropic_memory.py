"""Anthropic's memory tool on recallstore, driven by recorded ``tool_use`` content blocks."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.types.beta import BetaToolUseBlock

from recallstore.adapters.anthropic_memory import MEMORY_FILE_SECTION, RecallstoreMemoryTool
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemoryRecord, MemorySearchQuery

SCOPE = {"tenant": "acme", "user": "u1"}

# Content blocks as a Messages API response carries them (memory_20250818 commands).
RECORDED: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories"},
    {
        "command": "create",
        "path": "/memories/profile.md",
        "file_text": "# Profile\nLives in Porto.\nLikes tea.\n",
    },
    {
        "command": "str_replace",
        "path": "/memories/profile.md",
        "old_str": "Lives in Porto.",
        "new_str": "Lives in Lisbon.",
    },
    {"command": "insert", "path": "/memories/profile.md", "insert_line": 1, "insert_text": "Ana\n"},
    {"command": "view", "path": "/memories/profile.md"},
    {"command": "create", "path": "/memories/trips/april.md", "file_text": "Lisbon, April"},
    {"command": "rename", "old_path": "/memories/trips/april.md", "new_path": "/memories/may.md"},
    {"command": "view", "path": "/memories"},
    {"command": "delete", "path": "/memories/may.md"},
]


def blocks(inputs: list[dict[str, Any]]) -> list[BetaToolUseBlock]:
    return [
        BetaToolUseBlock.model_validate(
            {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "memory", "input": given}
        )
        for n, given in enumerate(inputs)
    ]


async def every_record(store: SqliteMemoryStore) -> list[MemoryRecord]:
    query = MemorySearchQuery(include_invalidated=True, limit=1000)
    return [hit.record for hit in await store.search(query)]


async def test_file_commands_become_superseding_records(store: SqliteMemoryStore) -> None:
    tool = RecallstoreMemoryTool(store, SCOPE)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    results = [await tool.call(block.input) for block in blocks(RECORDED)]

    assert results[0] == "/memories is empty."
    assert results[4] == (
        "Here's the content of /memories/profile.md with line numbers:\n"
        "     1\t# Profile\n     2\tAna\n     3\tLives in Lisbon.\n     4\tLikes tea.\n     5\t"
    )
    assert results[7] == "Files in /memories:\n13\t/memories/may.md\n42\t/memories/profile.md"

    records = await every_record(store)
    profile = [r for r in records if r.target and r.target.key == "/memories/profile.md"]
    assert len(profile) == 3  # create, str_replace, insert: an audit trail of versions
    valid = [r for r in profile if not r.is_invalidated]
    assert len(valid) == 1
    assert valid[0].payload == {"text": "# Profile\nAna\nLives in Lisbon.\nLikes tea.\n"}
    assert {r.superseded_by for r in profile if r.is_invalidated} <= {r.id for r in profile}
    assert all(
        r.scope == SCOPE and r.target and r.target.section == MEMORY_FILE_SECTION for r in records
    )
    # rename superseded the April file; delete invalidated the moved one, keeping both.
    april = [r for r in records if r.target and r.target.key == "/memories/trips/april.md"]
    may = [r for r in records if r.target and r.target.key == "/memories/may.md"]
    assert april[0].superseded_by == may[0].id
    assert may[0].invalid_reason == "deleted by the memory tool"
    listing = await tool.call({"command": "view", "path": "/memories"})
    assert listing == "Files in /memories:\n42\t/memories/profile.md"


async def test_another_scope_sees_other_files(store: SqliteMemoryStore) -> None:
    mine = RecallstoreMemoryTool(store, SCOPE)
    theirs = RecallstoreMemoryTool(store, {"tenant": "acme", "user": "u2"})
    await mine.call({"command": "create", "path": "/memories/a.md", "file_text": "secret"})
    assert await theirs.call({"command": "view", "path": "/memories"}) == "/memories is empty."
    with pytest.raises(ToolError, match="does not exist"):
        await theirs.call({"command": "view", "path": "/memories/a.md"})


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"command": "view", "path": "/etc/passwd"}, "Path must be /memories"),
        ({"command": "view", "path": "/memories/../x"}, "Path must be /memories"),
        ({"command": "view", "path": "/memories/none.md"}, "does not exist"),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "zz", "new_str": "y"},
            "did not appear verbatim",
        ),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "o", "new_str": "y"},
            "appears 2 times",
        ),
        (
            {"command": "insert", "path": "/memories/a.md", "insert_line": 9, "insert_text": "x"},
            "Invalid `insert_line`",
        ),
        ({"command": "delete", "path": "/memories"}, "Cannot delete"),
        (
            {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/a.md"},
            "already exists",
        ),
        ({"command": "create", "path": "/memories/big", "file_text": "x" * 16_001}, "maximum"),
        # What no record can hold is an answer too (issue 31, defect 7), not a crash.
        ({"command": "create", "path": "/memories/a\x00b", "file_text": "x"}, "NUL"),
        ({"command": "view", "path": "/memories/a\x00b"}, "NUL"),
        ({"command": "create", "path": "/memories/" + "p" * 250, "file_text": "x"}, "at most 256"),
        ({"command": "create", "path": "/memories/\ud800", "file_text": "x"}, "lone surrogates"),
        (
            {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/\udfff"},
            "lone surrogates",
        ),
        ({"command": "create", "path": "/memories/b", "file_text": "a\x00b"}, "NUL"),
        ({"command": "create", "path": "/memories/b", "file_text": "\ud83c"}, "surrogates"),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "f", "new_str": "\x00"},
            "NUL",
        ),
        # A file at the root would answer every `view /memories` with itself.
        ({"command": "create", "path": "/memories", "file_text": "x"}, "the memory directory"),
        ({"command": "create", "path": "/memories/", "file_text": "x"}, "the memory directory"),
        (
            {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories"},
            "the memory directory",
        ),
        # A path under a file would make a.md both a file and a directory.
        (
            {"command": "create", "path": "/memories/a.md/inner.md", "file_text": "x"},
            "/memories/a.md is a file, not a directory",
        ),
        (
            {"command": "create", "path": "/memories/a.md/b/c.md", "file_text": "x"},
            "/memories/a.md is a file, not a directory",
        ),
        (
            {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/a.md/x"},
            "/memories/a.md is a file, not a directory",
        ),
    ],
)
async def test_model_mistakes_are_tool_errors_and_change_nothing(
    store: SqliteMemoryStore, given: dict[str, Any], problem: str
) -> None:
    tool = RecallstoreMemoryTool(store, SCOPE)
    await tool.call({"command": "create", "path": "/memories/a.md", "file_text": "foo"})
    before = await every_record(store)
    with pytest.raises(ToolError, match=problem):
        await tool.call(given)
    assert await every_record(store) == before


async def test_a_file_over_a_directory_of_files_is_refused(store: SqliteMemoryStore) -> None:
    tool = RecallstoreMemoryTool(store, SCOPE)
    await tool.call({"command": "create", "path": "/memories/trips/april.md", "file_text": "A"})
    await tool.call({"command": "create", "path": "/memories/notes.md", "file_text": "N"})
    before = await every_record(store)
    refused = [
        {"command": "create", "path": "/memories/trips", "file_text": "x"},
        {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/trips"},
    ]
    for given in refused:
        with pytest.raises(ToolError, match="it is a directory holding 1 file"):
            await tool.call(given)
    assert await every_record(store) == before
    # The tree the model starts every task with is intact.
    assert await tool.call({"command": "view", "path": "/memories"}) == (
        "Files in /memories:\n1\t/memories/notes.md\n1\t/memories/trips/april.md"
    )
    # Overwriting an existing file is still a create, and a sibling name is fine.
    await tool.call({"command": "create", "path": "/memories/notes.md", "file_text": "N2"})
    await tool.call({"command": "create", "path": "/memories/trips.md", "file_text": "T"})
    viewed = await tool.call({"command": "view", "path": "/memories/trips"})
    assert viewed == "Files in /memories/trips:\n1\t/memories/trips/april.md"
