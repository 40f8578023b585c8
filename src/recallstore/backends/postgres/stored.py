"""Statements kept in the schema as functions, so a transaction pooler's server
connections plan them once (schema version 16, issue 42).

Behind a pooler in transaction mode nothing is prepared (postgres.connections), so
every statement was planned on every call: a scoped keyword search's statement
(candidates, totals and stem counts in one) took the server 0.25–0.45 ms to plan,
a fifth of the search through PgBouncer. A PL/pgSQL function's plans live in the
server connection, which the pooler keeps open: its statement is planned on the first
call (its generic plan, :data:`_OPTIONS`) and that plan reused, as a prepared
statement's is on a direct connection. Nothing of it belongs to a client session.

Two statements are kept: a scoped keyword search's candidates
(:func:`~recallstore.backends.postgres.search.candidates_sql`) and a one-pair scope's
newest records (:func:`~recallstore.backends.postgres.scope_order.scoped_listing_sql`),
each for a query with no filter but its scope. Each function is named by a digest of
its statement: a release that changes a statement calls a function no schema has until
a migration of its own creates it (:meth:`StoredStatement.create`), and until then the
store sends the statement itself (:func:`installed` finds which are there).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from recallstore.backends.postgres.scope_order import scoped_listing_sql
from recallstore.backends.postgres.scope_terms import SCOPE_CHECK
from recallstore.backends.postgres.search import (
    UNFILTERED_CONDITION,
    UNFILTERED_WHERE,
    candidates_sql,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "CANDIDATES",
    "LISTING",
    "STATEMENTS",
    "StoredStatement",
    "candidates_migration",
    "installed",
    "migration",
]


@dataclass(frozen=True)
class StoredStatement:
    """One statement (``%s`` placeholders) kept as a function of its arguments."""

    prefix: str
    statement: Callable[[str], str]
    """The statement in a schema."""
    arguments: tuple[str, ...]
    """The placeholders' SQL types, in order."""
    probe: tuple[Any, ...]
    """Arguments of those types, for one run that returns no row (the result columns)."""

    @cached_property
    def name(self) -> str:
        """``prefix`` and a digest of the function (its statement in a stand-in schema,
        its arguments and options)."""
        function = "\n".join([self.statement("s"), *self.arguments, _OPTIONS])
        return f"{self.prefix}_{hashlib.sha256(function.encode()).hexdigest()[:12]}"

    def signature(self, schema: str) -> str:
        """The function in ``schema`` with its argument types (a ``regprocedure``)."""
        return f"{schema}.{self.name}({', '.join(self.arguments)})"

    def call(self, schema: str) -> str:
        """The statement that calls the function, its arguments as ``%s`` placeholders."""
        casts = ", ".join(f"%s::{kind}" for kind in self.arguments)
        return f"SELECT * FROM {schema}.{self.name}({casts})"

    async def create(self, conn: AsyncConnection[Any], schema: str) -> None:
        """Create the function in ``schema``; its result columns are the statement's."""
        sql = self.statement(schema)
        cursor = await conn.execute(f"SELECT * FROM ({sql}) AS probe LIMIT 0", self.probe)
        oids = [column.type_code for column in cursor.description or ()]
        cursor = await conn.execute(
            "SELECT format_type(t.oid, NULL) FROM unnest(%s::oid[]) WITH ORDINALITY "
            "AS t(oid, n) ORDER BY t.n",
            [oids],
        )
        columns = ", ".join(f"out_{n} {kind}" for n, (kind,) in enumerate(await cursor.fetchall()))
        numbers = iter(range(1, len(self.arguments) + 1))
        body = re.sub("%s", lambda _: f"${next(numbers)}", sql)
        await conn.execute(
            f"CREATE OR REPLACE FUNCTION {self.signature(schema)} RETURNS TABLE ({columns}) "
            f"{_OPTIONS} AS $stored$ BEGIN RETURN QUERY {body}; END $stored$"
        )


_OPTIONS = "LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan"
"""How every function runs. The generic plan is forced: left to choose, the server
kept planning each call anew for the search (a tsquery parameter is estimated at a
default 0.5 % of the table, so the generic plan looked costlier than the custom ones),
and the function saved nothing. The generic plans have the custom plans' shapes: the
GIN index's bitmap for the scope's matches, the pair's btree read backwards for a
listing (``EXPLAIN`` at 100k and 10M records, docs/benchmarks.md)."""

_NOW = datetime(2000, 1, 1, tzinfo=UTC)

CANDIDATES = StoredStatement(
    "memory_candidates",
    lambda schema: candidates_sql(schema, UNFILTERED_CONDITION),
    ("tsquery", "tsquery", "timestamptz", "integer", "text[]", "integer", "integer", "bigint"),
    ("x", None, _NOW, 0, [], 0, 0, 0),
)
"""A scoped keyword search's candidates, totals and stem counts (``postgres.search``)."""

LISTING = StoredStatement(
    "memory_listing",
    lambda schema: scoped_listing_sql(schema, [SCOPE_CHECK, *UNFILTERED_WHERE]),
    ("text", "tsquery", "timestamptz", "integer"),
    ("x", None, _NOW, 0),
)
"""A scope's newest records by one pair's ``memory_scope_order`` entries, each checked
for the scope's common pairs (``postgres.scope_order``, ``postgres.scope_terms``)."""

STATEMENTS: Sequence[StoredStatement] = (CANDIDATES, LISTING)


def migration(schema: str) -> list[Callable[[AsyncConnection[Any], str], Awaitable[None]]]:
    """Schema version 16's steps: every statement's function. A later release that
    changes a statement appends a step that creates its function again (version 19
    appends these again: both statements check the scope's common pairs)."""
    del schema  # each step is given it
    return [statement.create for statement in STATEMENTS]


def candidates_migration(
    schema: str,
) -> list[Callable[[AsyncConnection[Any], str], Awaitable[None]]]:
    """Schema version 18's step: :data:`CANDIDATES`' function again, its statement given
    the version of the stem counts the caller holds (it counts the feedback words'
    stems only when those are of another version)."""
    del schema  # the step is given it
    return [CANDIDATES.create]


async def installed(conn: AsyncConnection[Any], schema: str) -> dict[str, str]:
    """The statements whose current function ``schema`` holds: each one's name and the
    statement that calls it there (:meth:`StoredStatement.call`), made once at open."""
    cursor = await conn.execute(
        "SELECT name FROM unnest(%s::text[], %s::text[]) AS s(name, signature) "
        "WHERE to_regprocedure(signature) IS NOT NULL",
        (
            [statement.name for statement in STATEMENTS],
            [statement.signature(schema) for statement in STATEMENTS],
        ),
    )
    found = {str(row[0]) for row in await cursor.fetchall()}
    return {st.name: st.call(schema) for st in STATEMENTS if st.name in found}
