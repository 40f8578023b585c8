"""How many records hold each stem: ``memory_terms``, kept in every write's transaction.

BM25 needs each query stem's document frequency over the whole store. FTS5's own
answer (an ``fts5vocab`` table) walks the stem's whole doclist: 200,000 records of
other users holding "garden" made a user's search after any write cost 3.6 ms instead
of 0.3 ms, and 274 ms instead of 4.7 ms at 10M records, because the cached figures
had to be recounted after every write (issue 38). Schema version 12 keeps the figures
in a table instead, ``memory_terms (term, docs)``, changed by the same transaction that
changes the index, so a search reads them in its own snapshot with one look-up per
stem, whoever wrote last.

The figures are FTS5's own, not a Python approximation of them: a batch's text goes
through a scratch FTS5 table with the index's tokenizer (``memory_terms_scratch``,
contentless, emptied again in the same transaction), and the scratch's ``fts5vocab``
(``row``) says which terms it holds in how many records. So ``docs`` is what
``memory_fts_vocab`` says for the ``content`` column, term for term, and a ranking is
the same as when it was counted there (the same stems as FTS5 indexes, diacritics,
ligatures and all). Invalidated and superseded records stay in the index and stay
counted; a deleted record's terms are taken off by a trigger, and a term no record
holds any more leaves the table with its last record (S5: the words of a forgotten
record leave the file; ``secure_delete`` zeroes the freed cells).

New records are counted by the statements of their insert (:func:`count_new`), one
pass per batch; deletes and content changes by triggers on ``memory_records`` (every
path that deletes, in this process or another, is covered, and the scratch table is
in the main file because a trigger there cannot use a TEMP table). The record count
and token total still come from the index's averages record (``search.fts5_totals``),
which FTS5 keeps itself.
"""

from __future__ import annotations

from typing import Final

from recallstore.backends.sqlite.rows import Statements

__all__ = ["MIGRATION", "count_new"]

_SCRATCH: Final = "memory_terms_scratch"
_SCRATCH_TERMS: Final = f"SELECT term, doc FROM {_SCRATCH}_vocab"
_ADD: Final = (
    f"INSERT INTO memory_terms (term, docs) {_SCRATCH_TERMS} WHERE true "
    "ON CONFLICT (term) DO UPDATE SET docs = docs + excluded.docs"
)
"""Add the scratch's counts (``WHERE true``: SQLite's upsert after a SELECT needs one)."""
_TAKE_OFF: Final = (
    "UPDATE memory_terms SET docs = docs - counted.doc "
    f"FROM {_SCRATCH}_vocab AS counted WHERE memory_terms.term = counted.term",
    f"DELETE FROM memory_terms WHERE docs <= 0 AND term IN (SELECT term FROM {_SCRATCH}_vocab)",
)
"""Take the scratch's counts off; a term no record holds any more leaves the table."""
_CLEAR: Final = f"INSERT INTO {_SCRATCH} ({_SCRATCH}) VALUES ('delete-all')"
_SCRATCH_NEW: Final = (
    f"INSERT INTO {_SCRATCH} (rowid, content) SELECT seq, content FROM memory_records "
    "WHERE seq >= ?"
)


def _trigger_body(*statements: str) -> str:
    return "".join(f"\n    {statement};" for statement in statements) + "\nEND"


MIGRATION: Final[tuple[str, ...]] = (
    "CREATE TABLE memory_terms (term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID",
    # Filled from the index itself, once: a walk of every doclist.
    "INSERT INTO memory_terms (term, docs) "
    "SELECT term, doc FROM memory_fts_vocab WHERE col = 'content' AND doc > 0",
    # ``{tokenize}``: the index's own (``schema.migrate`` reads it from the file).
    f"""CREATE VIRTUAL TABLE {_SCRATCH} USING fts5 (
        content,
        content = '',
        columnsize = 0,
        detail = none,
        tokenize = '{{tokenize}}'
    )""",
    f"CREATE VIRTUAL TABLE {_SCRATCH}_vocab USING fts5vocab ({_SCRATCH}, 'row')",
    "CREATE TRIGGER memory_records_terms_delete AFTER DELETE ON memory_records BEGIN"
    + _trigger_body(
        f"INSERT INTO {_SCRATCH} (rowid, content) VALUES (old.seq, old.content)",
        *_TAKE_OFF,
        _CLEAR,
    ),
    "CREATE TRIGGER memory_records_terms_update AFTER UPDATE OF content ON memory_records "
    "WHEN old.content IS NOT new.content BEGIN"
    + _trigger_body(
        f"INSERT INTO {_SCRATCH} (rowid, content) VALUES (old.seq, old.content)",
        *_TAKE_OFF,
        _CLEAR,
        f"INSERT INTO {_SCRATCH} (rowid, content) VALUES (new.seq, new.content)",
        _ADD,
        _CLEAR,
    ),
)
"""Schema version 12: the table, filled from the index, and what keeps it."""


def count_new(first_seq: int) -> Statements:
    """The statements (for ``executemany``) that count the terms of the records just
    inserted from ``first_seq`` on: their text read back from ``memory_records`` into
    the scratch index, its counts added, the scratch emptied."""
    return [(_SCRATCH_NEW, [(first_seq,)]), (_ADD, [()]), (_CLEAR, [()])]
