"""When two memories say the same thing: one normal form of a memory's text.

Two contents are *equal* when their normal forms are: Unicode NFKC (compatibility
forms such as full-width letters and ligatures become their plain letters), then
case folding (``casefold``, so ``Straße`` equals ``STRASSE``), then every run of
whitespace folded to one space and the ends stripped, then trailing sentence
punctuation (``. ! ; , …`` and their full-width forms) dropped. A trailing ``?`` is
kept: a question is not the statement it asks about. Nothing else is touched —
inner punctuation, digits and word order all count — so equality never merges two
different facts.

The toolbox's write-time check (``ScopedMemory.save``) and the deterministic
consolidation proposers use this one rule (docs/agent-surface.md).

Two contents are *near-identical* (:func:`statement_key`) when they are the same words
in the same order: equal after case folding and compatibility folding, with every run
of punctuation, symbols and whitespace between them ignored ("I live in Lisbon!" and
"i live in lisbon"). Digits and words all count ("3.5" is not "35", "don't" is not
"do not"), so this too never merges two different facts. The recall block shows a
near-identical statement once.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Final

__all__ = ["CONTENT_KEY_PREFIX", "content_key", "normal_form", "same_content", "statement_key"]

_SPACES: Final = re.compile(r"\s+")
_WORDS: Final = re.compile(r"[^\W_]+")
_TRAILING: Final = ".!;,…。！；，"
CONTENT_KEY_PREFIX: Final = "content:"
"""The prefix of the idempotency keys :func:`content_key` makes."""


def normal_form(text: str) -> str:
    """``text`` in the form equality is judged on (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    collapsed = _SPACES.sub(" ", folded).strip()
    return collapsed.rstrip(_TRAILING + " ")


def statement_key(text: str) -> str:
    """The words of ``text`` in order, as near-identical statements share them (see the
    module docstring): two contents with the same key say the same thing. A content
    without a word (only emoji, say) is keyed by its :func:`normal_form`."""
    words = _WORDS.findall(unicodedata.normalize("NFKC", text).casefold())
    return " ".join(words) if words else "\0" + normal_form(text)


def same_content(first: str, second: str) -> bool:
    """True when the two texts have the same :func:`normal_form`."""
    return normal_form(first) == normal_form(second)


def content_key(text: str) -> str:
    """An idempotency key naming ``text``'s normal form: equal contents share it."""
    digest = hashlib.sha256(normal_form(text).encode("utf-8", "surrogatepass")).hexdigest()
    return CONTENT_KEY_PREFIX + digest[:40]
