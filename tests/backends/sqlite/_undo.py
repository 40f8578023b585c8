"""What the migration tests run to set a file back before schema versions 12 and 13.

A test of migration N downgrades a new file to N - 1 and opens it again; every later
step's objects must go first, and these are versions 12's and 13's parts, written once.
"""

from __future__ import annotations

from typing import Final

UNDO_LEDGER: Final = "DROP TABLE memory_ledger;"
"""Version 13 (``sqlite.ledger``, issue 39) undone: the evolution ledger."""

UNDO_TERMS: Final = UNDO_LEDGER + (
    "DROP TRIGGER memory_records_terms_delete; DROP TRIGGER memory_records_terms_update; "
    "DROP TABLE memory_terms_scratch_vocab; DROP TABLE memory_terms_scratch; "
    "DROP TABLE memory_terms;"
)
"""Versions 13 and 12 (``sqlite.terms``) undone: the ledger, then the counts table, its
scratch index, triggers."""
