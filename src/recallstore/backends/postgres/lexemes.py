"""What a record's ``search_text`` holds: its content's stems and its scope pairs' lexemes.

The migrations compute it in SQL for stored rows, the store in Python for new ones, and
keyword search looks the same lexemes up: one definition for all three.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from recallstore._search.query import document_stems

__all__ = [
    "MAX_LEXEME_BYTES",
    "SCOPE_LEXEME_PREFIX",
    "content_stems",
    "index_stems",
    "listed_lexemes",
    "scope_lexeme",
    "scope_lexemes",
]

MAX_LEXEME_BYTES: Final = 2_047
"""Postgres refuses a tsvector lexeme longer than this; a longer stem is not indexed."""

SCOPE_LEXEME_PREFIX: Final = "scope:"
"""Starts every scope pair's lexeme in ``search_text`` (schema version 5). Stems are
runs of letters and digits, so no stem is ever mistaken for a scope pair."""


def scope_lexeme(key: str, value: str) -> str | None:
    """The ``search_text`` lexeme of one scope pair: ``scope:`` hex(key) ``=`` hex(value)
    (UTF-8), as schema version 5 computes it in SQL; None when too long to index."""
    lexeme = f"{SCOPE_LEXEME_PREFIX}{key.encode().hex()}={value.encode().hex()}"
    return lexeme if len(lexeme) <= MAX_LEXEME_BYTES else None


def index_stems(content: str, scope: Mapping[str, str] | None = None) -> tuple[list[str], int]:
    """What ``search_text`` and ``search_length`` hold for a record: its content's
    distinct stems (those Postgres can store) and its scope pairs' lexemes, and its
    length in stems, as every backend counts."""
    kept, length = content_stems(content)
    kept.extend(scope_lexemes((scope or {}).items()))
    return kept, length


def content_stems(content: str) -> tuple[list[str], int]:
    """The content's part of :func:`index_stems`: its distinct stems that Postgres can
    store, and its length in stems."""
    stems = document_stems(content)
    kept = list(dict.fromkeys(stems))
    # UTF-8 takes at most four bytes a character: only a longer stem can be too long.
    if kept and max(map(len, kept)) > MAX_LEXEME_BYTES // 4:
        kept = [stem for stem in kept if len(stem.encode()) <= MAX_LEXEME_BYTES]
    return kept, len(stems)


def scope_lexemes(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """The lexemes of a scope's pairs (:func:`scope_lexeme`), those short enough to
    index."""
    found = (scope_lexeme(key, value) for key, value in pairs)
    return [lexeme for lexeme in found if lexeme is not None]


def listed_lexemes(name: str, table: str, *columns: str) -> str:
    """A ``SELECT`` of every lexeme of ``table``'s rows' ``search_text`` as ``name``, a
    row each, with the row's ``columns``: the set-returning function in the select list,
    which Postgres runs about twice as fast as a lateral ``unnest`` in ``FROM``."""
    listed = ", ".join([f"unnest(tsvector_to_array(search_text)) AS {name}", *columns])
    return f"SELECT {listed} FROM {table}"
