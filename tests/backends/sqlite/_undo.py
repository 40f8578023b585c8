"""What the migration tests run to set a file back before schema version 12.

A test of migration N downgrades a new file to N - 1 and opens it again; every later
step's objects must go first, and this is version 12's part, written once.
"""

from __future__ import annotations

from typing import Final

UNDO_TERMS: Final = (
    "DROP TRIGGER memory_records_terms_delete; DROP TRIGGER memory_records_terms_update; "
    "DROP TABLE memory_terms_scratch_vocab; DROP TABLE memory_terms_scratch; "
    "DROP TABLE memory_terms;"
)
"""Version 12 (``sqlite.terms``) undone: the counts table, its scratch index, triggers."""
