"""JSON text from a model: every way it can fail comes back as a tool result, never raises."""

import pytest

from recallstore import InMemoryMemoryStore, MemorySearchQuery, MemoryToolbox

SCOPE = {"user": "u1"}

HUGE_INTEGER = "9" * 4301  # one digit over Python's default int-string limit
DEEP_ARRAYS = "[" * 100_000 + "]" * 100_000  # 200 kB, as in the hostile pass

BROKEN_ARGUMENTS = [
    pytest.param('{"query": "tea", "limit": ' + HUGE_INTEGER + "}", "digits", id="huge-integer"),
    pytest.param('{"query": ' + DEEP_ARRAYS + "}", "deeper", id="deep-arrays"),
    pytest.param(
        '{"query": "tea", "limit": ' + "[" * 300 + "]" * 300 + "}", "deeper", id="depth-300"
    ),
    pytest.param('{"query": "tea", "limit": NaN}', "NaN", id="nan"),
    pytest.param('{"query": "tea", "limit": 1e999}', "out of range", id="float-overflow"),
    pytest.param('{"query": "tea"', "Expecting", id="truncated"),
]


@pytest.mark.parametrize(("arguments", "problem"), BROKEN_ARGUMENTS)
async def test_json_text_arguments_that_cannot_be_read_are_a_tool_result(
    arguments: str, problem: str
) -> None:
    async with InMemoryMemoryStore() as store:
        toolbox = MemoryToolbox(store, SCOPE)
        result = await toolbox.call("memory_search", arguments)
        assert result["ok"] is False
        assert result["error"]["code"] == "invalid_arguments"
        assert result["error"]["message"].startswith("arguments are not valid JSON: ")
        assert problem in result["error"]["message"]
        # A save with the same problem writes nothing.
        saved = await toolbox.call("memory_save", arguments.replace('"query"', '"content"'))
        assert saved["ok"] is False
        assert await store.search(MemorySearchQuery()) == []
