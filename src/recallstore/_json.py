"""Parsing JSON text that came from outside: a model's tool call, an HTTP body, an import file.

``json.loads`` fails in more ways than its ``JSONDecodeError``: bytes that are not
text raise ``UnicodeDecodeError``, an integer longer than Python's int-string limit a
plain ``ValueError``, deep nesting ``RecursionError``. :func:`parse_untrusted_json`
turns every one of them into :class:`UntrustedJsonError`, whose message says what is
wrong, so each caller maps one exception to its own documented error. It also refuses
what would only fail later: ``NaN``/``Infinity`` and numbers that overflow to them
(not JSON, and not storable), and nesting deeper than any record can hold.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

__all__ = ["MAX_JSON_DEPTH", "MAX_JSON_INT_DIGITS", "UntrustedJsonError", "parse_untrusted_json"]

MAX_JSON_DEPTH: Final = 256
"""Deepest nesting of arrays and objects accepted: a record's payload may nest 254 deep."""
MAX_JSON_INT_DIGITS: Final = 4300
"""Longest integer accepted (Python's default int-string limit), whatever the process sets."""


class UntrustedJsonError(ValueError):
    """The text is not JSON this library accepts; the message names the problem."""


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise UntrustedJsonError(
            f"a number has {len(digits.lstrip('-'))} digits; at most {MAX_JSON_INT_DIGITS} "
            "are accepted"
        )
    return int(digits)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UntrustedJsonError(f"the number {text[:40]!r} is out of range")
    return value


def _refuse_constant(name: str) -> Any:
    raise UntrustedJsonError(f"{name} is not a JSON value")


def _depth_exceeds(value: Any, limit: int) -> bool:
    """True when arrays and objects in ``value`` nest deeper than ``limit`` (iteratively)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_untrusted_json(
    text: str | bytes | bytearray,
    *,
    max_chars: int | None = None,
    max_depth: int = MAX_JSON_DEPTH,
) -> Any:
    """The JSON value of ``text``; every way it can fail raises :class:`UntrustedJsonError`.

    ``text`` longer than ``max_chars`` (characters, or bytes for bytes) is refused before
    parsing; so are nesting deeper than ``max_depth``, integers over
    :data:`MAX_JSON_INT_DIGITS` digits, ``NaN``/``Infinity`` and numbers that overflow.
    """
    if max_chars is not None and len(text) > max_chars:
        unit = "characters" if isinstance(text, str) else "bytes"
        raise UntrustedJsonError(f"it is {len(text)} {unit}; at most {max_chars} are accepted")
    try:
        value = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_refuse_constant,
        )
    except UntrustedJsonError:
        raise
    except json.JSONDecodeError as exc:
        raise UntrustedJsonError(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except UnicodeDecodeError as exc:
        raise UntrustedJsonError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise UntrustedJsonError(f"it nests deeper than {max_depth} levels") from None
    except ValueError as exc:
        # int() under a lower int-string limit set by the host process.
        raise UntrustedJsonError(f"a number cannot be read: {exc}") from None
    if _depth_exceeds(value, max_depth):
        raise UntrustedJsonError(f"it nests deeper than {max_depth} levels")
    return value
