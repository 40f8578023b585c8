"""Tokenising user text for keyword search, shared by every keyword backend.

The token rule mirrors SQLite FTS5's ``unicode61`` tokenizer: runs of letters and
digits (Unicode categories L*, N*), case-folded, with diacritics removed. Anything
else, including every FTS5 operator character, is a separator, so a token can
never carry query syntax.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

MAX_QUERY_TERMS = 64
"""Query text beyond this many distinct terms is ignored, bounding search cost."""

_TOKEN = re.compile(r"[^\W_]+")
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")
""":data:`_TOKEN` on lower-cased ASCII text, where it means exactly this; twice as fast."""


def _strip_diacritics(text: str, form: Literal["NFD", "NFKD"] = "NFKD") -> str:
    decomposed = unicodedata.normalize(form, text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    """Split ``text`` into case-folded, diacritic-free word tokens, in order."""
    if text.isascii():
        # ASCII is left alone by NFKD and casefold() is lower() on it.
        return _ASCII_TOKEN.findall(text.lower())
    return _TOKEN.findall(_strip_diacritics(text).casefold())


def query_terms(text: str) -> list[str]:
    """The distinct search terms of ``text`` in first-seen order, at most MAX_QUERY_TERMS."""
    return list(dict.fromkeys(tokenize(text)))[:MAX_QUERY_TERMS]


def fts5_words(text: str) -> list[str]:
    """The words of ``text`` as FTS5's unicode61 folds them: lower-cased and diacritics
    removed, but without compatibility folding ("Straße" stays "straße"), first
    MAX_QUERY_TERMS only. SQLite searches for these as well as :func:`query_terms`."""
    return _TOKEN.findall(_strip_diacritics(text, "NFD").lower())[:MAX_QUERY_TERMS]
