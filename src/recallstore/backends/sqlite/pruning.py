"""FTS5's best matches of a broad keyword search, found by max-score pruning (issue 38).

A search broader than ``EXHAUSTIVE_SCOPE`` re-scores FTS5's own best matches
(``ranked._best_now``: ``ORDER BY bm25(memory_fts, 1.0, 0.0), rowid DESC LIMIT room``).
FTS5 computes ``bm25()`` for every match of the expression, and first counts the rows
of every phrase of it (each word's whole doclist, and the scope's) to get their idf:
the cost follows the scope's postings and the store's, not the ``room`` it keeps.

Here the same list is computed without ``bm25()``. Each phrase's idf comes from
``memory_terms`` (the figure FTS5 would count) and the row count and token total from
the index's averages record; a row's score is FTS5's formula evaluated in Python in
the same order of operations (``fts5_aux.c``: k1 1.2, b 0.75, every column's tokens
in the row's length), so the value is the same double. The phrases are taken rarest
first: the rows holding one of the rarest are read from the index (rowid, their
column sizes and text), scored in full, and when the ``room``-th best of them scores
more than the other phrases could give any row together, no row without a rare
phrase can rank among the ``room``: the list is FTS5's, read from the rare phrases'
doclists only. Otherwise the next rarest phrase joins, while the rows to read stay a
small share of what FTS5 would score; past that, ``None`` and the caller asks FTS5.

A phrase's contribution to a row is ``idf × f × 2.2 / (f + 1.2 × (0.25 + 0.75 × D /
avgdl))`` with ``f`` its count in the row and ``D`` the row's tokens, ``D ≥ f``; it is
below ``idf × 2.2 / (1 + 0.9 / avgdl)`` for any ``f``, the bound used for the phrases
not read.

Exactness rests on counting a row's words as FTS5 does: only the default tokenizer
(``porter unicode61 remove_diacritics 2``), and only ASCII text, where ``_search.text``
tokenises as ``unicode61`` does and ``porter_stem`` is FTS5's stemmer (both tested
against FTS5); a row whose token count differs from FTS5's column size, or any
non-ASCII text, sends the search to FTS5. ``tests/backends/sqlite/test_sqlite_pruning.py``
compares the two paths over random stores and queries.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Final

from recallstore._search.porter import porter_stem
from recallstore.backends.sqlite.search import IndexFigures, words_expression

__all__ = ["best_pruned_now", "fts5_bm25"]

_ENABLED = True
"""Private switch: False makes every search ask FTS5 (benchmarks time both paths)."""

_K1: Final = 1.2
_B: Final = 0.75
"""FTS5's bm25() constants (``fts5_aux.c``), not the ranking's (``_search.query``)."""
_SHARE: Final = 4
"""Rows read from the rare phrases' doclists stay under 1 / ``_SHARE`` of the rows of
every phrase (store-wide counts): past that, FTS5's own scoring is cheaper."""
_MARGIN: Final = 1e-9
"""Relative slack on the bound, far above the rounding of a sum of a few doubles."""

_ASCII_TOKEN: Final = re.compile(r"[a-z0-9]+")
_MATCH: Final = (
    "SELECT f.rowid, d.sz, r.content FROM memory_fts AS f "
    "JOIN memory_fts_docsize AS d ON d.id = f.rowid "
    "JOIN memory_records AS r ON r.seq = f.rowid WHERE memory_fts MATCH ?"
)


def fts5_bm25(idfs: Sequence[float], counts: Sequence[int], length: int, average: float) -> float:
    """FTS5's ``bm25()`` of a row (negative, lower is better), the same double: the
    phrases' ``idfs`` and ``counts`` in the expression's order, ``length`` the row's
    tokens in every column. A phrase of the scope column (weight 0) adds 0.0, which
    leaves the sum unchanged, so only the content's phrases are passed."""
    score = 0.0
    for idf, count in zip(idfs, counts, strict=True):
        frequency = float(count)
        score += idf * (
            (frequency * (_K1 + 1.0)) / (frequency + _K1 * (1 - _B + _B * length / average))
        )
    return -1.0 * score


def _column_sizes(block: bytes) -> list[int]:
    """The varints of a ``memory_fts_docsize`` row: each column's token count."""
    sizes, value = [], 0
    for byte in block:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            sizes.append(value)
            value = 0
    return sizes


def _stems(content: str) -> tuple[dict[str, int], int] | None:
    if not content.isascii():
        return None
    counts: dict[str, int] = {}
    words = _ASCII_TOKEN.findall(content.lower())
    for stem in map(porter_stem, words):
        counts[stem] = counts.get(stem, 0) + 1
    return counts, len(words)


def best_pruned_now(
    db: sqlite3.Connection,
    scope: Mapping[str, str],
    words: Sequence[str],
    figures: IndexFigures,
    room: int,
) -> list[tuple[int, float]] | None:
    """``(rowid, bm25)`` of the ``room`` best rows of ``scope`` holding one of ``words``,
    as FTS5 orders them (bm25, then rowid descending), or None when pruning cannot
    prove its answer cheaply (the caller then asks FTS5). ``words`` are the content
    phrases of the search's expression in its order, ASCII words of one token each."""
    if not _ENABLED or figures.rows <= 0 or len(words) < 2:
        return None
    terms = [porter_stem(word) for word in words]
    idfs = [figures.idf(term) for term in terms]
    bound = 2.2 / (1.0 + 0.9 / figures.average)
    order = sorted(range(len(words)), key=lambda index: (-idfs[index], index))
    total = sum(figures.documents.get(term, 0) for term in terms)
    scored: dict[int, float] = {}
    holding, unread = 0, 0
    for end in range(1, len(words)):
        holding += figures.documents.get(terms[order[end - 1]], 0)
        if holding * _SHARE > total:
            return None
        others = sum(idfs[index] for index in order[end:]) * bound
        # A row holding the least rare phrase read so far once, at the mean length,
        # scores its idf: when that is below what the others could add up to, the
        # room's last row is unlikely to beat them; add the next phrase before reading.
        if idfs[order[end - 1]] <= others:
            continue
        for phrase in order[unread:end]:
            rows = db.execute(_MATCH, (words_expression(scope, [words[phrase]]),)).fetchall()
            if not _score_rows(rows, terms, idfs, figures.average, scored):
                return None  # text FTS5 may count otherwise: let it rank
        unread = end
        if len(scored) < room:
            continue
        best = sorted(scored.items(), key=lambda item: (item[1], -item[0]))[:room]
        if -best[-1][1] > others * (1 + _MARGIN) + _MARGIN:
            return best
    return None


def _score_rows(
    rows: Sequence[tuple[int, bytes, str]],
    terms: Sequence[str],
    idfs: Sequence[float],
    average: float,
    scored: dict[int, float],
) -> bool:
    """Score ``rows`` (rowid, column sizes, text) into ``scored``; False when a row's
    text is not one this module counts as FTS5 does (non-ASCII, or another token count
    than the index's)."""
    for rowid, sizes, content in rows:
        if rowid in scored:
            continue
        counted = _stems(str(content))
        columns = _column_sizes(bytes(sizes))
        if counted is None or not columns or columns[0] != counted[1]:
            return False
        counts = [counted[0].get(term, 0) for term in terms]
        scored[int(rowid)] = fts5_bm25(idfs, counts, sum(columns), average)
    return True
