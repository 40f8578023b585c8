"""Helpers shared by the benchmark scripts that read an FTS5 index directly."""

from __future__ import annotations

import sqlite3

from recallstore.backends.sqlite.search import fts5_totals as _totals_of_block


def fts5_totals(conn: sqlite3.Connection, table: str) -> tuple[int, list[int]]:
    """(rows, tokens per column) of FTS5 table ``table``, read from its averages record.
    ``table`` is trusted code, never user text."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    return _totals_of_block(row[0] if row else b"")
