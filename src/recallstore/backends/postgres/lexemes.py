"""What a record's ``search_text`` holds: its content's stems and its scope pairs' lexemes.

The migrations compute it in SQL for stored rows, the store in Python for new ones, and
keyword search looks the same lexemes up: one definition for all three.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from recallstore._search.query import document_stems

__all__ = [
    "MAX_LEXEME_BYTES",
    "SCOPE_LEXEME_PREFIX",
    "index_stems",
    "listed_lexemes",
    "scope_lexeme",
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
    stems = document_stems(content)
    kept = [stem for stem in dict.fromkeys(stems) if len(stem.encode()) <= MAX_LEXEME_BYTES]
    for key, value in (scope or {}).items():
        lexeme = scope_lexeme(key, value)
        if lexeme is not None:
            kept.append(lexeme)
    return kept, len(stems)


def listed_lexemes(name: str, table: str, *columns: str) -> str:
    """A ``SELECT`` of every lexeme of ``table``'s rows' ``search_text`` as ``name``, a
    row each, with the row's ``columns``: the set-returning function in the select list,
    which Postgres runs about twice as fast as a lateral ``unnest`` in ``FROM``."""
    listed = ", ".join([f"unnest(tsvector_to_array(search_text)) AS {name}", *columns])
    return f"SELECT {listed} FROM {table}"
