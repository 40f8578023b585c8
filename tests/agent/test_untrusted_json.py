"""JSON text from a model: every way it can fail comes back as a tool result, never raises."""

import json
import sys

import pytest

from recallstore import InMemoryMemoryStore, MemorySearchQuery, MemoryToolbox
from recallstore._json import (
    MAX_JSON_DEPTH,
    MAX_JSON_INT_DIGITS,
    UntrustedJsonError,
    parse_untrusted_json,
)

SCOPE = {"user": "u1"}

HUGE_INTEGER = "9" * (MAX_JSON_INT_DIGITS + 1)
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


def test_the_int_digit_cap_holds_whatever_the_process_limit() -> None:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # a host that lifted Python's limit
    try:
        with pytest.raises(UntrustedJsonError, match="4301 digits"):
            parse_untrusted_json(HUGE_INTEGER)
        assert parse_untrusted_json("9" * MAX_JSON_INT_DIGITS) == int("9" * MAX_JSON_INT_DIGITS)
        sys.set_int_max_str_digits(1000)  # a host that lowered it
        with pytest.raises(UntrustedJsonError, match="cannot be read"):
            parse_untrusted_json("9" * 1001)
    finally:
        sys.set_int_max_str_digits(old)


def test_nesting_up_to_the_limit_parses_and_one_more_level_does_not() -> None:
    deepest = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert json.dumps(parse_untrusted_json(deepest)) == deepest
    with pytest.raises(UntrustedJsonError, match="deeper than 256 levels"):
        parse_untrusted_json("[" + deepest + "]")
    with pytest.raises(UntrustedJsonError, match="deeper than 256 levels"):
        parse_untrusted_json('{"a": ' * 300 + "1" + "}" * 300)


def test_bytes_size_and_encoding_problems_are_named() -> None:
    with pytest.raises(UntrustedJsonError, match="not UTF-8"):
        parse_untrusted_json(b'{"a": "\xff"}')
    with pytest.raises(UntrustedJsonError, match="11 characters; at most 10"):
        parse_untrusted_json('{"a": "bc"}', max_chars=10)
    with pytest.raises(UntrustedJsonError, match="Infinity is not a JSON value"):
        parse_untrusted_json("[Infinity]")
    assert parse_untrusted_json(b'{"a": [1, 2.5, null, "\\u00e9"]}') == {"a": [1, 2.5, None, "é"]}
