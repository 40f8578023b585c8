"""Invisible characters in memory text are shown as escapes in the command's text output."""

from __future__ import annotations

import asyncio
import json

import pytest

from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

# A sentence hidden in variation selectors and tag letters, after a visible word.
HIDDEN = "\ufe0f\U000e0100\U000e0069\U000e0067\u200b\u2066"
CONTENT = "tea" + HIDDEN + " and \U0001f468\u200d\U0001f469 family"


async def _store_one(path) -> str:
    async with SqliteMemoryStore(path) as store:
        records = await store.write([MemoryWriteInput(scope={"u": "1"}, content=CONTENT)])
    return records[0].id


@pytest.mark.parametrize("command", ["list", "search", "show"])
def test_invisible_characters_are_shown_as_escapes(cli, tmp_path, command) -> None:
    path = tmp_path / "hidden.db"
    record_id = asyncio.run(_store_one(path))
    argument = {"list": [], "search": ["tea"], "show": [record_id]}[command]

    output = cli(command, *argument, "--db", path).out

    assert not set(HIDDEN) & set(output)
    assert "tea\\ufe0f\\U000e0100\\U000e0069\\U000e0067\\u200b\\u2066 and" in output
    # The joiner an emoji sequence needs is left alone.
    assert "\U0001f468\u200d\U0001f469" in output
    if command == "show":
        exact = json.loads(cli("show", record_id, "--db", path, "--json").out)
        assert exact["record"]["content"] == CONTENT
