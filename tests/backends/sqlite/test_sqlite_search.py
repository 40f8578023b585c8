"""SQLite keyword search: scope tokens in the FTS5 index, and schema version 2's migration."""

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore._search.query import plan_query
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite.schema import MIGRATIONS, TOKENIZERS
from recallstore.backends.sqlite.search import candidates_sql, match_expression, scope_token

HOSTILE_SCOPE = {
    "tenant": 'ac"me OR *',
    "user": "Ünïcode ß 用户",
    "a=b": "c x0 d",
    "a": "b=c",
}


def fts_rowids(db: Path, expression: str) -> set[int]:
    conn = sqlite3.connect(db)
    try:
        return {
            row[0]
            for row in conn.execute(
                "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", (expression,)
            )
        }
    finally:
        conn.close()


async def test_the_triggers_index_each_scope_pair_as_the_token_python_asks_for(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        await store.write(
            [
                MemoryWriteInput(scope=HOSTILE_SCOPE, content="alpha"),
                MemoryWriteInput(scope={"a=b": "c", "x0 d": "z"}, content="beta"),
            ]
        )
    for key, value in HOSTILE_SCOPE.items():
        assert fts_rowids(db, f'scope_terms : "{scope_token(key, value)}"') == {1}
    # "a=b"/"c x0 d" and "a"/"b=c" must not collide with the second record's pairs.
    assert fts_rowids(db, f'scope_terms : "{scope_token("a=b", "c")}"') == {2}
    assert fts_rowids(db, f'"{scope_token("a", "b=c")}"') == {1}
    # Scope tokens never answer a content search.
    assert fts_rowids(db, f'content : "{scope_token("a", "b=c")}"') == set()


async def test_a_scoped_search_is_answered_inside_fts5(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        await store.write(
            [
                MemoryWriteInput(scope={"tenant": "t", "user": f"u{i % 50}"}, content=f"tea {i}")
                for i in range(500)
            ]
        )
        hits = await store.search(
            MemorySearchQuery(query="tea", scope={"user": "u7", "tenant": "t"}, limit=100)
        )
    assert sorted(int(hit.record.content.split()[1]) for hit in hits) == list(range(7, 500, 50))
    query = MemorySearchQuery(query="tea", scope={"user": "u7"})
    expression = match_expression(query.scope, plan_query("tea"), "tea")
    assert expression == f'scope_terms : ("{scope_token("user", "u7")}") AND content : ("tea")'
    for ordered in (True, False):
        sql, params = candidates_sql(query, datetime.now(UTC), ordered=ordered)
        async with (
            aiosqlite.connect(db) as conn,
            conn.execute(f"EXPLAIN QUERY PLAN {sql}", [expression, *params, 10]) as cursor,
        ):
            plan = "\n".join(str(row[3]) for row in await cursor.fetchall())
        # The scope is part of the MATCH: no side-table look-up per match.
        assert "memory_scope" not in plan, plan
        assert "SCAN memory_fts VIRTUAL TABLE" in plan, plan


def version_1_file(db: Path) -> None:
    """A file as schema version 1 left it, with two records in two scopes."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        version, statements = MIGRATIONS[0]
        assert version == 1
        for statement in statements:
            conn.execute(statement.format(tokenize=TOKENIZERS["porter"]))
        conn.execute("INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00.000000Z')")
        for seq, (user, content) in enumerate(
            [("u1", "walking the dogs in the park"), ("u2", "the dog walked home")], start=1
        ):
            stamp = f"2026-01-01T00:00:0{seq}.000000Z"
            conn.execute(
                "INSERT INTO memory_records (seq, id, kind, content, scope, tags, supports, "
                "created_at, updated_at) VALUES (?, ?, 'fact', ?, ?, '[]', '[]', ?, ?)",
                (seq, f"r{seq}", content, json.dumps({"user": user}), stamp, stamp),
            )
            conn.execute("INSERT INTO memory_scope VALUES (?, 'user', ?)", (seq, user))
        conn.execute("PRAGMA user_version = 1")
    finally:
        conn.close()


async def test_a_version_1_file_migrates_in_place_and_searches_by_scope(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    version_1_file(db)
    async with SqliteMemoryStore(db) as store:
        both = await store.search(MemorySearchQuery(query="walk the dog"))
        scoped = await store.search(MemorySearchQuery(query="walk the dog", scope={"user": "u2"}))
        await store.delete("r1")
        after_delete = await store.search(MemorySearchQuery(query="park"))
    assert {hit.record.id for hit in both} == {"r1", "r2"}
    assert [hit.record.id for hit in scoped] == ["r2"]
    assert after_delete == []
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (MIGRATIONS[-1][0],)
        versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations")]
        assert versions == [version for version, _ in MIGRATIONS]
        assert conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check')")
    finally:
        conn.close()


async def test_the_longest_scope_parts_are_one_token_each(tmp_path: Path) -> None:
    # 256 four-byte characters: a 4,000-character token, still exact.
    key, value = "𝔘" * 256, "𝔙" * 256
    async with SqliteMemoryStore(tmp_path / "memory.db") as store:
        first, _ = await store.write(
            [
                MemoryWriteInput(scope={key: value}, content="tea time"),
                MemoryWriteInput(scope={key: value[:-1] + "x"}, content="tea"),
            ]
        )
        hits = await store.search(MemorySearchQuery(query="tea", scope={key: value}))
        assert [hit.record.id for hit in hits] == [first.id]
        await store.delete(first.id)
        assert await store.search(MemorySearchQuery(query="tea", scope={key: value})) == []
