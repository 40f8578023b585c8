"""Which of a scope's pairs the GIN index reads, and which are checked on its rows.

A scoped search asks the GIN index on ``search_text`` for ``pair & pair & (stem | …)``
(each scope pair is a lexeme there, schema version 5). GIN drives such a scan by its
rarest entries and skips through every other entry's posting tree once for each row
they yield: for a user's ~100 records in a tenant holding a tenth of the table, that
was a leaf page of the tenant's tree for each of them (67 buffers against 24 for a
user-scoped keyword search at 1M records; docs/benchmarks.md). A pair that common
narrows little that a rarer pair of the same scope has not narrowed already, so it is
checked on the rows the index finds instead (``ts_match_vq``, which no index serves),
and a listing reads the rare pair's ``memory_scope_order`` entries alone.

The planner's own statistics say which pairs are common (:data:`COMMON_RATIO`): the
shares of the scope lexemes among ``pg_stats.most_common_elems`` of ``search_text``
(its 10,000 most common elements at statistics target 1,000, schema version 15; a pair
not there counts as the smallest share listed), read when the store opens and again
after :data:`REFRESH_SECONDS`. Before the table is analyzed there are none, and every
pair is read by the index as before. Which pairs are read changes the plan, never the
rows: the checked pairs are still required of every row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from recallstore.backends.postgres.lexemes import SCOPE_LEXEME_PREFIX, scope_lexeme

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "COMMON_RATIO",
    "REFRESH_SECONDS",
    "SCOPE_CHECK",
    "CommonPairs",
    "PairFrequencies",
    "ScopeTerms",
    "scope_terms",
]

SCOPE_CHECK: Final = "coalesce(ts_match_vq(search_text, %s::tsquery), true)"
"""The clause that checks a row for the scope's common pairs (:attr:`ScopeTerms.checked`;
NULL when the index reads them all, and the clause is then true). A function call, not
the ``@@`` operator: the planner would hand an operator to the GIN index."""

COMMON_RATIO: Final = 10.0
"""A pair is checked on the rows, not read by the index, when it is in at least this
many times the share of rows of the scope's rarest pair. Where it holds every record
the rarer pair does (a tenant's and its user's), the rows read are the same; where it
does not, they are at most the rarer pair's, a tenth of the common one's or fewer."""

REFRESH_SECONDS: Final = 60.0
"""How long the frequencies read from ``pg_stats`` are used before they are read again
(one small statement; autovacuum's ``ANALYZE`` changes them as the table grows)."""


def _tsquery(lexemes: Collection[str]) -> str:
    # Lexemes are "scope:", hex digits and "=": quoting cannot be escaped.
    return " & ".join(f"'{lexeme}'" for lexeme in lexemes)


@dataclass(frozen=True)
class PairFrequencies:
    """Shares of ``memory_records``' rows holding scope pairs, as ``ANALYZE`` sampled
    them: the pairs among ``search_text``'s most common elements, and ``floor``, the
    smallest share of any element there (what a pair not listed has at most)."""

    shares: Mapping[str, float] = field(default_factory=dict)
    floor: float = 0.0

    def share(self, lexeme: str) -> float:
        """``lexeme``'s share of the rows, or the floor when it is not listed."""
        return self.shares.get(lexeme, self.floor)


@dataclass(frozen=True)
class ScopeTerms:
    """A scope as ``search_text`` lexemes: those the GIN index reads and the tsquery
    each row it finds is checked for (None: the index reads every pair)."""

    read: tuple[str, ...]
    checked: str | None = None

    @property
    def indexed(self) -> str:
        """The tsquery of the pairs the index reads."""
        return _tsquery(self.read)

    @property
    def single(self) -> str | None:
        """The one pair the index reads, if one: a listing reads its
        ``memory_scope_order`` entries (``postgres.scope_order``)."""
        return self.read[0] if len(self.read) == 1 else None


def scope_terms(
    scope: Mapping[str, str], frequencies: PairFrequencies | None = None
) -> ScopeTerms | None:
    """``scope``'s lexemes, those listed in ``frequencies`` with :data:`COMMON_RATIO`
    times the share of its rarest pair or more checked on the rows; None when the
    scope is empty or a pair is too long to be indexed."""
    lexemes = [scope_lexeme(key, value) for key, value in scope.items()]
    if not lexemes or None in lexemes:
        return None
    pairs = [lexeme for lexeme in lexemes if lexeme is not None]
    if frequencies is None or not frequencies.shares or len(pairs) < 2:
        return ScopeTerms(tuple(pairs))
    rarest = min(frequencies.share(lexeme) for lexeme in pairs)
    common = [
        lexeme
        for lexeme in pairs
        if lexeme in frequencies.shares and frequencies.shares[lexeme] >= COMMON_RATIO * rarest
    ]
    if not common or rarest <= 0:
        return ScopeTerms(tuple(pairs))
    read = tuple(lexeme for lexeme in pairs if lexeme not in common)
    return ScopeTerms(read, _tsquery(common))


class CommonPairs:
    """The scope pairs' shares of the rows (:class:`PairFrequencies`) from ``pg_stats``,
    read at most every :data:`REFRESH_SECONDS` (``clock``: monotonic)."""

    def __init__(self, schema: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._schema = schema
        self._clock = clock
        self._frequencies = PairFrequencies()
        self._read_at: float | None = None

    @property
    def frequencies(self) -> PairFrequencies:
        """The shares as last read (none before the first read)."""
        return self._frequencies

    @property
    def due(self) -> bool:
        """Whether the shares were never read or were read :data:`REFRESH_SECONDS` ago."""
        return self._read_at is None or self._clock() - self._read_at >= REFRESH_SECONDS

    async def read(self, conn: AsyncConnection[Any]) -> None:
        """Read the scope pairs among ``search_text``'s most common elements, with
        their shares and the floor (none before the table's first ``ANALYZE``)."""
        cursor = await conn.execute(
            "SELECT e.lexeme, e.share, s.most_common_elem_freqs[cardinality(l.listed) + 1] "
            "FROM pg_stats AS s, LATERAL (SELECT s.most_common_elems::text::text[]) AS l(listed), "
            "unnest(l.listed, s.most_common_elem_freqs) AS e(lexeme, share) "
            "WHERE s.schemaname = %s AND s.tablename = 'memory_records' "
            "AND s.attname = 'search_text' AND e.lexeme LIKE %s",
            (self._schema, f"{SCOPE_LEXEME_PREFIX}%"),
        )
        rows = await cursor.fetchall()
        shares = {str(lexeme): float(share) for lexeme, share, _ in rows}
        floor = min((float(row[2]) for row in rows), default=0.0)
        self._frequencies = PairFrequencies(shares, floor)
        self._read_at = self._clock()
