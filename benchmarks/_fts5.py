"""Helpers shared by the benchmark scripts that read an FTS5 index directly."""

from __future__ import annotations

import sqlite3


def fts5_totals(conn: sqlite3.Connection, table: str) -> tuple[int, list[int]]:
    """(rows, tokens per column) of FTS5 table ``table``, read from its averages record
    (``<table>_data`` id 1: SQLite varints, kept current by FTS5 on every insert and
    delete). ``table`` is trusted code, never user text."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    block: bytes = row[0] if row else b""
    values, offset = [], 0
    while offset < len(block):
        value = 0
        for position in range(9):
            byte = block[offset]
            offset += 1
            if position == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return (values[0], values[1:]) if values else (0, [])
