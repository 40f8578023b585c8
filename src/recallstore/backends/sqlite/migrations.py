"""The SQLite backend's migration ladder: every schema step, append-only.

A released step is never edited; a change is a new ``(version, statements)`` entry at
the end. ``schema.migrate`` applies them; ``PRAGMA user_version`` records the newest.
"""

from __future__ import annotations

from typing import Final

from recallstore.backends.sqlite.journal import JOURNAL_TABLE_STATEMENTS, JOURNAL_TRACE_INDEXES
from recallstore.backends.sqlite.ledger import MIGRATION as LEDGER_STATEMENTS
from recallstore.backends.sqlite.terms import MIGRATION as TERM_STATEMENTS
from recallstore.backends.sqlite.vectors import MIGRATION as VECTOR_STATEMENTS

__all__ = ["DEFAULT_TOKENIZER", "MIGRATIONS", "SCHEMA_VERSION", "TOKENIZERS"]

TOKENIZERS: Final[dict[str, str]] = {
    "porter": "porter unicode61 remove_diacritics 2",
    "unicode61": "unicode61 remove_diacritics 2",
}
"""FTS5 tokenizer definitions the store may be created with, by short name."""

DEFAULT_TOKENIZER: Final = "porter"
"""Chosen on LoCoMo recall@10 measured through the store (see docs/benchmarks.md)."""


# Append-only. ``{tokenize}`` is replaced by a value from TOKENIZERS (never user text).
MIGRATIONS: Final[tuple[tuple[int, tuple[str, ...]], ...]] = (
    (
        1,
        (
            """CREATE TABLE schema_migrations (
                version INTEGER PRIMARY KEY,
                applied_at TEXT NOT NULL
            )""",
            # seq is the FTS5 rowid; id is the public, opaque record id.
            """CREATE TABLE memory_records (
                seq INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                kind TEXT NOT NULL,
                content TEXT NOT NULL,
                scope TEXT NOT NULL,
                tags TEXT NOT NULL,
                provenance TEXT,
                target TEXT,
                payload TEXT,
                supports TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                invalid_at TEXT,
                invalid_reason TEXT,
                superseded_by TEXT,
                expires_at TEXT
            )""",
            "CREATE INDEX memory_records_recency ON memory_records (created_at, id)",
            # Scope and tags live in side tables so subset filters are index lookups.
            """CREATE TABLE memory_scope (
                record_seq INTEGER NOT NULL REFERENCES memory_records (seq) ON DELETE CASCADE,
                key TEXT NOT NULL,
                value TEXT NOT NULL,
                PRIMARY KEY (record_seq, key)
            ) WITHOUT ROWID""",
            "CREATE INDEX memory_scope_by_pair ON memory_scope (key, value, record_seq)",
            """CREATE TABLE memory_tags (
                record_seq INTEGER NOT NULL REFERENCES memory_records (seq) ON DELETE CASCADE,
                tag TEXT NOT NULL,
                PRIMARY KEY (record_seq, tag)
            ) WITHOUT ROWID""",
            "CREATE INDEX memory_tags_by_tag ON memory_tags (tag, record_seq)",
            # External content: the index holds no second copy of the text.
            """CREATE VIRTUAL TABLE memory_fts USING fts5 (
                content,
                content = 'memory_records',
                content_rowid = 'seq',
                tokenize = '{tokenize}'
            )""",
            # Triggers keep the index in the same transaction as every row change.
            """CREATE TRIGGER memory_records_fts_insert AFTER INSERT ON memory_records BEGIN
                INSERT INTO memory_fts (rowid, content) VALUES (new.seq, new.content);
            END""",
            """CREATE TRIGGER memory_records_fts_delete AFTER DELETE ON memory_records BEGIN
                INSERT INTO memory_fts (memory_fts, rowid, content)
                VALUES ('delete', old.seq, old.content);
            END""",
            """CREATE TRIGGER memory_records_fts_update AFTER UPDATE OF content ON memory_records
            BEGIN
                INSERT INTO memory_fts (memory_fts, rowid, content)
                VALUES ('delete', old.seq, old.content);
                INSERT INTO memory_fts (rowid, content) VALUES (new.seq, new.content);
            END""",
        ),
    ),
    (
        2,
        # Scope-bounded search: each scope pair of a record becomes one token of a second
        # FTS5 column, so a scoped search intersects doclists inside FTS5 instead of
        # matching across every scope and filtering afterwards. The token is
        # hex(key) 'x' hex(value) '0': letters and digits only, so one token, unique per
        # pair, and ending in a digit so the Porter stemmer leaves it alone
        # (``_sqlite_rows.scope_token`` builds the same in Python). The index becomes
        # contentless: the text stays in memory_records only, and the triggers hand the
        # old values to FTS5's 'delete'.
        (
            "DROP TRIGGER memory_records_fts_insert",
            "DROP TRIGGER memory_records_fts_delete",
            "DROP TRIGGER memory_records_fts_update",
            "DROP TABLE memory_fts",
            """CREATE VIRTUAL TABLE memory_fts USING fts5 (
                content,
                scope_terms,
                content = '',
                tokenize = '{tokenize}'
            )""",
            """CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab (memory_fts, 'col')""",
            """INSERT INTO memory_fts (rowid, content, scope_terms)
            SELECT seq, content, (
                SELECT group_concat(hex(key) || 'x' || hex(value) || '0', ' ')
                FROM json_each(memory_records.scope)
            ) FROM memory_records""",
            """CREATE TRIGGER memory_records_fts_insert AFTER INSERT ON memory_records BEGIN
                INSERT INTO memory_fts (rowid, content, scope_terms) VALUES (
                    new.seq, new.content, (
                        SELECT group_concat(hex(key) || 'x' || hex(value) || '0', ' ')
                        FROM json_each(new.scope)
                    )
                );
            END""",
            """CREATE TRIGGER memory_records_fts_delete AFTER DELETE ON memory_records BEGIN
                INSERT INTO memory_fts (memory_fts, rowid, content, scope_terms) VALUES (
                    'delete', old.seq, old.content, (
                        SELECT group_concat(hex(key) || 'x' || hex(value) || '0', ' ')
                        FROM json_each(old.scope)
                    )
                );
            END""",
            """CREATE TRIGGER memory_records_fts_update
            AFTER UPDATE OF content, scope ON memory_records BEGIN
                INSERT INTO memory_fts (memory_fts, rowid, content, scope_terms) VALUES (
                    'delete', old.seq, old.content, (
                        SELECT group_concat(hex(key) || 'x' || hex(value) || '0', ' ')
                        FROM json_each(old.scope)
                    )
                );
                INSERT INTO memory_fts (rowid, content, scope_terms) VALUES (
                    new.seq, new.content, (
                        SELECT group_concat(hex(key) || 'x' || hex(value) || '0', ' ')
                        FROM json_each(new.scope)
                    )
                );
            END""",
        ),
    ),
    # Idempotency keys (S16): one valid record per (scope, key); the scope column is
    # canonical JSON (keys sorted), so equal scopes are equal strings.
    (
        3,
        (
            "ALTER TABLE memory_records ADD COLUMN idempotency_key TEXT",
            """CREATE UNIQUE INDEX memory_records_idempotency
                ON memory_records (scope, idempotency_key)
                WHERE idempotency_key IS NOT NULL AND invalid_at IS NULL""",
        ),
    ),
    # The event journal (recallstore.backends.journal).
    (4, JOURNAL_TABLE_STATEMENTS),
    # Cheaper writes and listings (issue 10). The store numbers each record's seq in its
    # transaction and inserts the FTS row itself (``_sqlite_rows.PendingInsert``): the
    # trigger's per-row subprogram, with json_each over the scope, cost more than the
    # index it fed. Scope rows carry their record's created_at (microseconds since
    # 1970, exact: whole seconds from strftime plus the fixed-width fraction), so the
    # pair index serves a scope's records newest first and a listing reads its limit
    # of rows instead of sorting the scope.
    (
        5,
        (
            "DROP TRIGGER memory_records_fts_insert",
            "ALTER TABLE memory_scope ADD COLUMN created_us INTEGER NOT NULL DEFAULT 0",
            """UPDATE memory_scope SET created_us = (
                SELECT CAST(strftime('%s', substr(r.created_at, 1, 19)) AS INTEGER) * 1000000
                    + CAST(substr(r.created_at, 21, 6) AS INTEGER)
                FROM memory_records AS r WHERE r.seq = memory_scope.record_seq
            )""",
            "DROP INDEX memory_scope_by_pair",
            "CREATE INDEX memory_scope_recency "
            "ON memory_scope (key, value, created_us, record_seq)",
        ),
    ),
    # Hybrid search: vectors beside the records, and the embedder that made them.
    (6, VECTOR_STATEMENTS),
    # Cheaper writes (issue 10): the scope rows are kept in the order listings read them,
    # (key, value, created_us, record_seq), as the table itself. Before, each pair was
    # written twice, into the table by record and into the index by pair, and the
    # index's inserts landed at random pages. A record's rows are found
    # from its scope and created_at (the PRIMARY KEY exactly), so the foreign key's
    # cascade becomes a trigger; a record's pairs are checked against its scope column.
    (
        7,
        (
            """CREATE TABLE memory_scope_by_pair (
                key TEXT NOT NULL,
                value TEXT NOT NULL,
                created_us INTEGER NOT NULL,
                record_seq INTEGER NOT NULL,
                PRIMARY KEY (key, value, created_us, record_seq)
            ) WITHOUT ROWID""",
            """INSERT INTO memory_scope_by_pair (key, value, created_us, record_seq)
            SELECT key, value, created_us, record_seq FROM memory_scope
            ORDER BY key, value, created_us, record_seq""",
            "DROP TABLE memory_scope",
            "ALTER TABLE memory_scope_by_pair RENAME TO memory_scope",
            """CREATE TRIGGER memory_records_scope_delete AFTER DELETE ON memory_records BEGIN
                DELETE FROM memory_scope WHERE (key, value, created_us, record_seq) IN (
                    SELECT pair.key, pair.value,
                        CAST(strftime('%s', substr(old.created_at, 1, 19)) AS INTEGER) * 1000000
                            + CAST(substr(old.created_at, 21, 6) AS INTEGER),
                        old.seq
                    FROM json_each(old.scope) AS pair
                );
            END""",
        ),
    ),
    # Memories in time (issue 26): when the remembered thing was said or happened.
    # NULL means at the save, created_at (every older record, and most new ones), so
    # the column costs nothing where it says nothing; searches read
    # coalesce(observed_at, created_at).
    (8, ("ALTER TABLE memory_records ADD COLUMN observed_at TEXT",)),
    # Consolidation plans (issue 27): the "revise" extension keeps each applied plan
    # and what every record it changed held before, so the plan can be reverted.
    (
        9,
        (
            """CREATE TABLE memory_revisions (
                id TEXT PRIMARY KEY,
                scope TEXT NOT NULL,
                created_at TEXT NOT NULL,
                body TEXT NOT NULL,
                undo TEXT NOT NULL,
                reverted_at TEXT
            )""",
        ),
    ),
    # A scoped listing with an observed window (issue 26): each scope row carries its
    # record's observed time (microseconds since 1970, as created_us), NULL where it is
    # created_us, as in memory_records. The listing walks the pair's rows newest first
    # as before and skips those outside the window in the row itself, reading a record
    # only when it is in the window: a window that holds fewer than the limit costs a
    # scan of the scope's rows, not a look-up of every record in the scope. A column,
    # not a second index: a write keeps one scope row per pair.
    (
        10,
        (
            "ALTER TABLE memory_scope ADD COLUMN observed_us INTEGER",
            # Driven by the dated records (a scan of memory_records, then each of their
            # rows by its PRIMARY KEY): a file where none is dated is done in a
            # fraction of a second at 1M records (UPDATE ... FROM walked every scope
            # row and its record: 23 s).
            """UPDATE memory_scope SET observed_us = (
                SELECT CAST(strftime('%s', substr(r.observed_at, 1, 19)) AS INTEGER) * 1000000
                    + CAST(substr(r.observed_at, 21, 6) AS INTEGER)
                FROM memory_records AS r WHERE r.seq = memory_scope.record_seq
            ) WHERE (key, value, created_us, record_seq) IN (
                SELECT pair.key, pair.value,
                    CAST(strftime('%s', substr(r.created_at, 1, 19)) AS INTEGER) * 1000000
                        + CAST(substr(r.created_at, 21, 6) AS INTEGER),
                    r.seq
                FROM memory_records AS r, json_each(r.scope) AS pair
                WHERE r.observed_at IS NOT NULL
            )""",
        ),
    ),
    # Forgotten means gone everywhere (issue 36): a delete erases the journal rows of
    # the record's conversations and runs, and the rows carrying text, found by these
    # partial indexes instead of a scan of the journal (10 MB at 20,000 searches).
    (11, JOURNAL_TRACE_INDEXES),
    # Ranking statistics a write does not invalidate (issue 38): how many records hold
    # each stem, kept in every write's transaction (``sqlite.terms``); before, a search
    # after any write recounted its stems over the whole index.
    (12, TERM_STATEMENTS),
    # Memory that learns (issue 39): the evolution ledger of the "promote" extension,
    # a row per corroborate, promote and demote (``sqlite.ledger``).
    (13, LEDGER_STATEMENTS),
)

SCHEMA_VERSION: Final[int] = MIGRATIONS[-1][0]
"""The newest schema version this code can read and write."""
