"""A scope's vectors gathered once (SQLite hybrid search): what a scoped search compares.

Comparing a query with a scope's rows of the store's :class:`VectorCache` first gathers
them (20,000 rows of 384 float32 are 30 MB copied) after counting the scope's pairs
and listing its record numbers: at 20,000 records that cost four times the comparison
itself (issue 38). Here the scope's rows are kept gathered, in one contiguous matrix
per driving pair, for the scopes searched last (at most :data:`SCOPE_COPY_BYTES`), with
the listing they were made from:

* while the file has not changed since (``PRAGMA data_version`` and the connection's
  ``total_changes``, as the cache itself checks), a search of the same scope runs no
  statement before comparing;
* after any change, the pair that drove the scope before is listed again (one range of
  the scope index, no counting) and the rows are gathered again only when that listing
  differs, or when a cached row arrived for a record number seen before (a vector
  replaced, a deleted record's number reused).

Results do not change: every row of the scope is compared, row by row
(:func:`~recallstore.backends._vectors.cosines`), and any pair of at most
:data:`SCAN_SCOPE` records gives the same records in the same order (the other pairs
are checked on the best, by primary key).
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

from recallstore.backends._vectors import Matrix, numpy
from recallstore.backends.sqlite.search import Filter, narrowest_within_now
from recallstore.records import MemorySearchQuery

if TYPE_CHECKING:
    from recallstore.backends.sqlite.vectors import VectorCache

__all__ = ["SCAN_SCOPE", "SCOPE_COPY_BYTES", "ScopeCopies", "ScopeCopy", "scope_rows_now"]

SCAN_SCOPE: Final = 20_000
"""A scope of at most this many records (:data:`EXACT_ROWS`) is compared exactly, row by
row of its own; a broader one goes through the whole cache's closest rows."""

SCOPE_COPY_BYTES: Final = 64 * 1024 * 1024
"""How many bytes of vectors the scopes' gathered copies (:class:`ScopeCopies`) may
hold at once, beyond the cache itself; the least recently searched go first."""


class ScopeCopy:
    """A scope's rows gathered into one contiguous matrix, and what they were made of:
    the scope's listing (record numbers as SQLite listed them), the cache's
    replacement count then, and the file's version when last found current."""

    __slots__ = ("listed", "matrix", "positions", "replaced", "seqs", "version")

    def __init__(
        self, listed: str, seqs: Matrix, positions: Matrix, matrix: Matrix, replaced: int
    ) -> None:
        self.listed, self.seqs, self.positions = listed, seqs, positions
        self.matrix, self.replaced = matrix, replaced
        self.version: tuple[int, int] | None = None


class ScopeCopies:
    """The gathered rows of recently searched scopes (by driving pair), at most
    :data:`SCOPE_COPY_BYTES` in all, and which pair drove each query's scope."""

    def __init__(self) -> None:
        self.copies: OrderedDict[tuple[str, str], ScopeCopy] = OrderedDict()
        # A query's scope pairs -> (the pair that drove it, the file's version then).
        self.drivers: OrderedDict[tuple[tuple[str, str], ...], tuple[tuple[str, str], Any]] = (
            OrderedDict()
        )
        self._bytes = 0

    def get(self, pair: tuple[str, str]) -> ScopeCopy | None:
        copy = self.copies.get(pair)
        if copy is not None:
            self.copies.move_to_end(pair)
        return copy

    def put(self, pair: tuple[str, str], copy: ScopeCopy) -> None:
        old = self.copies.pop(pair, None)
        if old is not None:
            self._bytes -= old.matrix.nbytes
        if copy.matrix.nbytes > SCOPE_COPY_BYTES:
            return
        self.copies[pair] = copy
        self._bytes += copy.matrix.nbytes
        while self._bytes > SCOPE_COPY_BYTES:
            _, dropped = self.copies.popitem(last=False)
            self._bytes -= dropped.matrix.nbytes

    def drove(
        self, scope: tuple[tuple[str, str], ...], pair: tuple[str, str], version: Any
    ) -> None:
        self.drivers[scope] = (pair, version)
        self.drivers.move_to_end(scope)
        while len(self.drivers) > _DRIVERS_KEPT:
            self.drivers.popitem(last=False)


_DRIVERS_KEPT: Final = 4_096

_SCOPE_LISTING: Final = (
    "SELECT group_concat(record_seq) FROM ("
    "SELECT record_seq FROM memory_scope WHERE key = ? AND value = ? LIMIT ?)"
)


def scope_rows_now(
    db: sqlite3.Connection, query: MemorySearchQuery, cache: VectorCache
) -> tuple[ScopeCopy, tuple[str, str]] | None:
    """The rows of ``query``'s scope (its narrowest pair's records, or a pair of at
    most :data:`SCAN_SCOPE` records that drove it before) gathered in one matrix, and
    that pair; None when every pair holds more than :data:`SCAN_SCOPE` records. Call
    right after :meth:`VectorCache.load`.

    Which pair drives changes the cost only: every row of the pair is compared and
    the other pairs are checked on the best, so any pair within :data:`SCAN_SCOPE`
    gives the same records in the same order. While the file has not changed
    (:attr:`VectorCache.version`) a scope searched before costs no statement at all;
    after a change, its pair is listed again (one index range, no count) and its
    rows are gathered again only when the listing or a row of it changed.
    """
    np, copies, version = numpy(), cache._scopes, cache.version
    scope = tuple(query.scope.items())
    if not scope:
        return None
    known = copies.drivers.get(scope)
    if known is not None and known[1] == version:
        copy = copies.get(known[0])
        if copy is not None and copy.version == version:
            return copy, known[0]
    listed: str | None = None
    driving: tuple[str, str] | None = None
    if known is not None:
        # The pair that drove before, listed one row past the limit: still within it,
        # it gives the same records as the narrowest (see above), without the counts.
        (text,) = db.execute(_SCOPE_LISTING, (*known[0], SCAN_SCOPE + 1)).fetchone()
        if (text or "").count(",") < SCAN_SCOPE:
            listed, driving = text or "", known[0]
    if driving is None:
        pairs: list[Filter] = [("scope", pair) for pair in scope]
        driver = narrowest_within_now(db, pairs, SCAN_SCOPE)
        if driver is None:
            return None
        driving = scope[driver]
        (text,) = db.execute(_SCOPE_LISTING, (*driving, SCAN_SCOPE + 1)).fetchone()
        listed = text or ""
    assert listed is not None
    copies.drove(scope, driving, version)
    copy = copies.get(driving)
    if copy is None or copy.listed != listed or copy.replaced != cache._replaced:
        # The record numbers as one string: 20,000 rows as tuples cost as much as
        # comparing their vectors.
        listing = np.fromstring(listed or "0", dtype=np.int64, sep=",")  # 0: none
        seqs, positions = cache.positions(np.sort(listing))
        assert cache._rows is not None  # loaded by the caller
        matrix = np.ascontiguousarray(cache._rows.matrix[positions])
        copy = ScopeCopy(listed, seqs, positions, matrix, cache._replaced)
        copies.put(driving, copy)
    copy.version = version
    return copy, driving
