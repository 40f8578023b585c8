"""Invisible characters in memory text are shown as escapes in the command's text output."""

from __future__ import annotations

import asyncio
import json

from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

# A sentence hidden in variation selectors and tag letters, after a visible word.
HIDDEN = "\ufe0f\U000e0100\U000e0069\U000e0067\u200b\u2066"


def test_invisible_characters_are_shown_as_escapes(cli, tmp_path) -> None:
    path = tmp_path / "hidden.db"
    content = "tea" + HIDDEN + " and \U0001f468\u200d\U0001f469 family"

    async def fill() -> str:
        async with SqliteMemoryStore(path) as store:
            [record] = await store.write([MemoryWriteInput(scope={"u": "1"}, content=content)])
        return record.id

    record_id = asyncio.run(fill())
    for output in (
        cli("list", "--db", path).out,
        cli("search", "tea", "--db", path).out,
        cli("show", record_id, "--db", path).out,
    ):
        assert not set(HIDDEN) & set(output)
        assert "tea\\ufe0f\\U000e0100\\U000e0069\\U000e0067\\u200b\\u2066 and" in output
        # The joiner an emoji sequence needs is left alone.
        assert "\U0001f468\u200d\U0001f469" in output
    shown = json.loads(cli("show", record_id, "--db", path, "--json").out)
    assert shown["record"]["content"] == content
