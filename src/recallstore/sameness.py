"""When two memories say the same thing: one normal form of a memory's text.

Two contents are *equal* when their normal forms are: Unicode NFKC (compatibility
forms such as full-width letters and ligatures become their plain letters), then
case folding (``casefold``, so ``Straße`` equals ``STRASSE``), then every run of
whitespace folded to one space and the ends stripped, then trailing sentence
punctuation (``. ! ; , …`` and their full-width forms) dropped. A trailing ``?`` is
kept: a question is not the statement it asks about. Nothing else is touched —
inner punctuation, digits and word order all count — so equality never merges two
different facts.

The toolbox's write-time check (``ScopedMemory.save``), the recall block and the
deterministic consolidation proposers all use this one rule (docs/agent-surface.md).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Final

__all__ = ["CONTENT_KEY_PREFIX", "content_key", "normal_form", "same_content"]

_SPACES: Final = re.compile(r"\s+")
_TRAILING: Final = ".!;,…。！；，"
CONTENT_KEY_PREFIX: Final = "content:"
"""The prefix of the idempotency keys :func:`content_key` makes."""


def normal_form(text: str) -> str:
    """``text`` in the form equality is judged on (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    collapsed = _SPACES.sub(" ", folded).strip()
    return collapsed.rstrip(_TRAILING + " ")


def same_content(first: str, second: str) -> bool:
    """True when the two texts have the same :func:`normal_form`."""
    return normal_form(first) == normal_form(second)


def content_key(text: str) -> str:
    """An idempotency key naming ``text``'s normal form: equal contents share it."""
    digest = hashlib.sha256(normal_form(text).encode("utf-8", "surrogatepass")).hexdigest()
    return CONTENT_KEY_PREFIX + digest[:40]
