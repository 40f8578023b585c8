"""What a record's ``payload`` may hold: JSON as RFC 8259 defines it, within limits every
backend and every export can carry exactly.

A payload is ``None``, a bool, an int, a finite float, a string, a list of payloads or
a dict of string keys to payloads, with:

* no ``NaN`` or ``±Infinity`` (not JSON: SQLite kept them, export wrote ``null``,
  Postgres refused them with a raw driver error);
* integers of at most :data:`MAX_PAYLOAD_INT_DIGITS` digits (the lowest int-string
  limit a Python process can set, so any process can print and parse what was stored);
* nesting at most :data:`MAX_PAYLOAD_DEPTH` deep (a record's own JSON must parse back);
* strings and keys every backend stores: no NUL, no lone surrogate.

Anything else is refused at the edge with a :class:`~recallstore.errors.MemoryValidationError`
whose field is the dotted path to the offending value (shortened when deep); what is
accepted comes back exactly, float as float and int as int, ``-0.0`` included.
"""

from __future__ import annotations

import math
from typing import Any, Final

from recallstore.errors import MemoryValidationError

__all__ = ["MAX_PAYLOAD_DEPTH", "MAX_PAYLOAD_INT_DIGITS", "check_payload"]

MAX_PAYLOAD_DEPTH: Final = 64
"""Deepest nesting of lists and dicts in a payload (a bare value is depth 0)."""
MAX_PAYLOAD_INT_DIGITS: Final = 640
"""Longest integer in a payload, in decimal digits (sign not counted)."""

_PATH_PARTS_SHOWN: Final = 6
_KEY_CHARS_SHOWN: Final = 32
_INT_BITS_SURELY_SHORT: Final = 2_000  # 2**2000 has 603 digits: no need to count


def _path(parts: list[str | int]) -> str:
    """The dotted path of ``parts``, shortened: long keys cut, a deep path's middle left out."""
    # A lone surrogate in a key is shown escaped: the message must itself be valid text.
    texts = [str(part).encode("utf-8", "backslashreplace").decode() for part in parts]
    shown = [
        text if len(text) <= _KEY_CHARS_SHOWN else f"{text[:_KEY_CHARS_SHOWN]}…" for text in texts
    ]
    if len(shown) > _PATH_PARTS_SHOWN:
        keep = _PATH_PARTS_SHOWN // 2
        shown = [*shown[:keep], f"…{len(shown) - 2 * keep} levels…", *shown[-keep:]]
    return ".".join(shown)


def _refuse(parts: list[str | int], message: str, value: Any) -> MemoryValidationError:
    return MemoryValidationError(_path(parts), message, value)


def _check_text(text: str, parts: list[str | int], what: str) -> None:
    if "\x00" in text:
        raise _refuse(parts, f"{what} must not contain NUL characters", text)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            message = f"{what} must be valid Unicode (no lone surrogates)"
            raise _refuse(parts, message, text) from None


def _check_int(value: int, parts: list[str | int]) -> None:
    if value.bit_length() <= _INT_BITS_SURELY_SHORT:
        return
    # Counting digits without str(): that is what fails beyond the int-string limit.
    if abs(value) >= 10**MAX_PAYLOAD_INT_DIGITS:
        digits = math.floor(value.bit_length() * math.log10(2)) + 1
        raise _refuse(
            parts,
            f"an integer of about {digits} digits; at most {MAX_PAYLOAD_INT_DIGITS} are "
            "allowed (store a longer number as a string)",
            None,
        )


def check_payload(payload: Any) -> Any:
    """``payload`` if it is a payload (see the module); else :class:`MemoryValidationError`
    whose field is the dotted path within the payload to the first offending value
    (``""`` for the payload itself; the model's field validation puts ``payload.`` in
    front). Iterative: a deep payload fails on its depth, never on the interpreter's
    recursion limit."""
    stack: list[tuple[Any, list[str | int]]] = [(payload, [])]
    while stack:
        value, parts = stack.pop()
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, int):
            _check_int(value, parts)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise _refuse(parts, f"{value!r} is not a JSON number (no NaN or Infinity)", value)
        elif isinstance(value, str):
            _check_text(value, parts, "a string in payload")
        elif isinstance(value, list | dict):
            if len(parts) >= MAX_PAYLOAD_DEPTH:
                raise _refuse(
                    parts,
                    f"the payload nests deeper than {MAX_PAYLOAD_DEPTH} levels of lists and dicts",
                    None,
                )
            if isinstance(value, list):
                stack.extend((item, [*parts, index]) for index, item in enumerate(value))
                continue
            for key, item in value.items():
                if not isinstance(key, str):
                    raise _refuse(
                        parts, f"payload keys must be strings, got {type(key).__name__}", key
                    )
                _check_text(key, [*parts, key], "a key in payload")
                stack.append((item, [*parts, key]))
        else:
            raise _refuse(
                parts,
                f"a payload holds JSON values only (None, bool, int, float, str, list, dict), "
                f"not {type(value).__name__}",
                value,
            )
    return payload
