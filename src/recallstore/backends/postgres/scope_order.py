"""Scoped listings newest first: the ``memory_scope_order`` table (schema version 14).

A listing (a search without query text) of a one-pair scope, ``{"user": u}``, wants
the newest records whose scope holds that pair, whatever else it holds (a scope
matches by subset). The GIN index on ``search_text`` finds them (each scope pair is a
lexeme there, schema version 5), but in no order: every one of the scope's records
was read from the heap and sorted for the newest ten (at 100,000 records in 1,000
users, 105 heap pages for a listing against a btree's 13). ``memory_scope_order`` holds
one row per record and scope pair, ``(pair lexeme, created_at, id)``, its primary key
a btree read backwards from the pair's newest entry: ten index entries, then ten
records by primary key. SQLite keeps the same thing in its ``memory_scope`` table. A
scope of several pairs is listed the same way by its one pair that is not common, the
others checked on each record (``postgres.scope_terms``: a user's pair in a tenant's).

Triggers keep it, statement by statement, from the rows' ``search_text`` (what every
insert and delete of ``memory_records`` already writes; a record's scope and
``created_at`` never change). A migration that rewrites ``search_text``'s scope
lexemes must rebuild it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from recallstore.backends.postgres.lexemes import SCOPE_LEXEME_PREFIX, listed_lexemes
from recallstore.backends.postgres.rows import TEXT_COLUMNS

__all__ = [
    "fill_statement",
    "listed_migration",
    "migration",
    "scoped_listing_sql",
]


def _pairs_of(table: str) -> str:
    # Every scope pair lexeme of ``table``'s rows, with the row's created_at and id.
    return (
        f"SELECT pair, created_at, id FROM {table}, "
        f"unnest(tsvector_to_array(search_text)) AS pair WHERE pair LIKE '{SCOPE_LEXEME_PREFIX}%'"
    )


def fill_statement(schema: str) -> str:
    """The ``INSERT`` that fills ``memory_scope_order`` from every stored record (the
    migration's, and a bulk loader's that ran with triggers off)."""
    return (
        f"INSERT INTO {schema}.memory_scope_order (pair, at, record_id) "
        f"{_pairs_of(f'{schema}.memory_records')}"
    )


def migration(schema: str) -> list[str]:
    """Schema version 14 (issue 42): ``memory_scope_order``, filled from the stored
    records, and the triggers that keep it."""
    table = f"{schema}.memory_scope_order"
    steps = [
        f"""CREATE TABLE {table} (
            pair text NOT NULL,
            at timestamptz NOT NULL,
            record_id text NOT NULL,
            PRIMARY KEY (pair, at, record_id)
        )""",
        fill_statement(schema),
    ]
    for event, function in _functions(schema, _pairs_of, replace=False).items():
        rows = "added" if event == "INSERT" else "removed"
        steps += [
            function,
            f"CREATE TRIGGER memory_scope_order_{event.lower()} AFTER {event} "
            f"ON {schema}.memory_records REFERENCING {'NEW' if event == 'INSERT' else 'OLD'} "
            f"TABLE AS {rows} FOR EACH STATEMENT EXECUTE FUNCTION {schema}."
            f"memory_scope_order_{event.lower()}()",
        ]
    return steps


def listed_migration(schema: str) -> list[str]:
    """Schema version 17 (issue 42): the triggers' functions redefined to read the
    rows' lexemes as :func:`~recallstore.backends.postgres.lexemes.listed_lexemes` does
    (the same rows, cheaper)."""
    return list(_functions(schema, _listed_pairs_of, replace=True).values())


def _listed_pairs_of(table: str) -> str:
    # As _pairs_of.
    lexemes = listed_lexemes("pair", table, "created_at", "id")
    return (
        f"SELECT pair, created_at, id FROM ({lexemes}) AS listed "
        f"WHERE pair LIKE '{SCOPE_LEXEME_PREFIX}%'"
    )


def _functions(schema: str, pairs_of: Callable[[str], str], *, replace: bool) -> dict[str, str]:
    # The trigger function of each event, by event.
    table = f"{schema}.memory_scope_order"
    changes = {
        "INSERT": f"INSERT INTO {table} (pair, at, record_id) {pairs_of('added')}",
        "DELETE": f"DELETE FROM {table} AS o USING ({pairs_of('removed')}) AS gone "
        "WHERE o.pair = gone.pair AND o.at = gone.created_at AND o.record_id = gone.id",
    }
    create = "CREATE OR REPLACE" if replace else "CREATE"
    return {
        event: f"""{create} FUNCTION {schema}.memory_scope_order_{event.lower()}()
            RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                {change};
                RETURN NULL;
            END $$"""
        for event, change in changes.items()
    }


def scoped_listing_sql(schema: str, where: Sequence[str]) -> str:
    """The newest records of the pair ``%s`` passing ``where`` (on ``memory_records``'
    columns; a scope's other pairs are checked there, ``postgres.scope_terms``), at
    most ``%s``, as :data:`~recallstore.backends.postgres.rows.TEXT_COLUMNS`,
    newest first (``created_at DESC, id DESC``, the records' own order)."""
    condition = " AND ".join(["o.pair = %s", *where])
    return (
        f"SELECT {TEXT_COLUMNS} FROM {schema}.memory_scope_order AS o "
        f"JOIN {schema}.memory_records ON id = o.record_id "
        f"WHERE {condition} ORDER BY o.at DESC, o.record_id DESC LIMIT %s"
    )
