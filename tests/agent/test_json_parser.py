"""recallstore._json: the one parser for JSON text from outside, and every way it fails."""

import json
import sys

import pytest

from recallstore._json import (
    MAX_JSON_DEPTH,
    MAX_JSON_INT_DIGITS,
    UntrustedJsonError,
    parse_untrusted_json,
)

HUGE_INTEGER = "9" * (MAX_JSON_INT_DIGITS + 1)


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
