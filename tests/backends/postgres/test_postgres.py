"""Postgres-specific behaviour the conformance kit does not cover: schema versioning,
connection failures, and the GIN indexes behind scope and text filters."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import psycopg
import pytest

from recallstore import (
    MemoryConflictError,
    MemorySearchQuery,
    MemoryWriteInput,
    StoreIncompatibleError,
    StoreUnavailableError,
)
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.postgres import SCHEMA_VERSION, PostgresMemoryStore
from recallstore.backends.postgres.schema import SEARCH_TEXT_STATISTICS, migrations
from recallstore.errors import ConfigurationError


async def test_newer_schema_is_refused_and_left_untouched(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write([MemoryWriteInput(scope={"user": "u1"}, content="keeps bees")])
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {postgres_schema}.schema_migrations (version) VALUES (99)")
        before = conn.execute(f"SELECT * FROM {postgres_schema}.memory_records").fetchall()

    with pytest.raises(StoreIncompatibleError) as caught:
        async with PostgresMemoryStore(postgres_url, schema=postgres_schema):
            pass

    assert (caught.value.found_version, caught.value.supported_version) == (99, SCHEMA_VERSION)
    assert "99" in str(caught.value)
    assert str(SCHEMA_VERSION) in str(caught.value)
    with psycopg.connect(postgres_url) as conn:
        after = conn.execute(f"SELECT * FROM {postgres_schema}.memory_records").fetchall()
    assert after == before


async def test_migrations_are_recorded_once(postgres_url: str, postgres_schema: str) -> None:
    for _ in range(2):
        async with PostgresMemoryStore(postgres_url, schema=postgres_schema):
            pass
    with psycopg.connect(postgres_url) as conn:
        versions = conn.execute(
            f"SELECT version FROM {postgres_schema}.schema_migrations ORDER BY version"
        ).fetchall()
    assert versions == [(version,) for version in range(1, SCHEMA_VERSION + 1)]


async def test_search_text_has_the_finer_statistics_target(
    postgres_url: str, postgres_schema: str
) -> None:
    """Schema version 15: with the default target a one-pair scope's lexeme was
    estimated at 67 times its rows at 10M records and its listing (before version 14)
    walked the recency index (docs/benchmarks.md, "Postgres at ten million records"); the plan needs
    millions of rows to show, so the setting itself is what is checked here."""
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema):
        pass
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute(
            "SELECT attstattarget FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = 'search_text'",
            (f"{postgres_schema}.memory_records",),
        ).fetchone()
    assert row == (SEARCH_TEXT_STATISTICS,)


async def test_unreachable_server_is_an_error_naming_the_target_without_password() -> None:
    store = PostgresMemoryStore("postgresql://someone:s3cret@127.0.0.1:1/nowhere")
    with pytest.raises(StoreUnavailableError) as caught:
        await store.open()
    assert "s3cret" not in str(caught.value)
    assert "127.0.0.1:1/nowhere" in str(caught.value)


@pytest.mark.parametrize(
    "dsn",
    [
        "host=127.0.0.1 port=1 password=s3cret dbname=nowhere",
        "host=127.0.0.1 port=1 password='s3cret words' dbname=nowhere",
        "postgresql://someone@127.0.0.1:1/nowhere?password=s3cret&connect_timeout=3",
    ],
)
async def test_passwords_in_conninfo_and_query_strings_are_redacted(dsn: str) -> None:
    store = PostgresMemoryStore(dsn)
    with pytest.raises(StoreUnavailableError) as caught:
        await store.open()
    assert "s3cret" not in str(caught.value)
    assert "password=***" in str(caught.value)


def test_schema_name_must_be_a_plain_identifier() -> None:
    with pytest.raises(ConfigurationError, match="schema"):
        PostgresMemoryStore("postgresql://localhost/x", schema="x; DROP TABLE y")


async def test_scope_and_text_filters_can_use_the_gin_indexes(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write(
            [MemoryWriteInput(scope={"tenant": "acme", "user": "u1"}, content="likes tea")]
        )
        hits = await store.search(MemorySearchQuery(query="tea", scope={"tenant": "acme"}))
        assert [hit.record.content for hit in hits] == ["likes tea"]
    table = f"{postgres_schema}.memory_records"
    with psycopg.connect(postgres_url) as conn:
        conn.execute("SET enable_seqscan = off")
        scope_plan = conn.execute(
            f"EXPLAIN SELECT id FROM {table} WHERE scope @> %s::jsonb", ('{"tenant": "acme"}',)
        ).fetchall()
        text_plan = conn.execute(
            f"EXPLAIN SELECT id FROM {table} WHERE search_text @@ %s::tsquery", ("'tea'",)
        ).fetchall()
    assert "memory_records_scope" in " ".join(line for (line,) in scope_plan)
    assert "memory_records_text" in " ".join(line for (line,) in text_plan)


async def test_scope_pairs_are_lexemes_and_a_pair_too_long_for_one_still_filters(
    postgres_url: str, postgres_schema: str
) -> None:
    # 256 four-byte characters: 2,048 hex digits, over Postgres' lexeme limit.
    wide = "\U0001f600" * 256
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        tea, other, far = await store.write(
            [
                MemoryWriteInput(scope={"tenant": "acme", "user": "u1"}, content="likes tea"),
                MemoryWriteInput(scope={"tenant": "acme", "user": "u2"}, content="likes tea"),
                MemoryWriteInput(scope={"tenant": "acme", "user": wide}, content="likes tea"),
            ]
        )
        for scope, expected in [
            ({"user": "u1"}, [tea.id]),
            ({"tenant": "acme", "user": "u2"}, [other.id]),
            ({"user": wide}, [far.id]),
            ({"tenant": "acme", "user": wide}, [far.id]),
        ]:
            hits = await store.search(MemorySearchQuery(query="tea", scope=scope))
            assert [hit.record.id for hit in hits] == expected
            listed = await store.search(MemorySearchQuery(scope=scope))
            assert [hit.record.id for hit in listed] == expected
        # A query word spelled like a pair's lexeme matches no record's scope (S10).
        lexeme = "scope:" + b"user".hex() + "=" + b"u1".hex()
        assert await store.search(MemorySearchQuery(query=lexeme)) == []
    with psycopg.connect(postgres_url) as conn:
        texts = conn.execute(
            f"SELECT search_text::text FROM {postgres_schema}.memory_records WHERE id = %s",
            (tea.id,),
        ).fetchone()
        stems = conn.execute(f"SELECT stem FROM {postgres_schema}.memory_stems").fetchall()
    assert texts is not None
    assert f"'{lexeme}'" in texts[0]
    assert sorted(stem for (stem,) in stems) == ["like", "tea"]


async def test_a_version_1_schema_migrates_to_our_stems_and_totals(
    postgres_url: str, postgres_schema: str
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {postgres_schema}")
        conn.execute(
            f"CREATE TABLE {postgres_schema}.schema_migrations "
            "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for statement in migrations(postgres_schema)[0]:
            assert isinstance(statement, str)
            conn.execute(statement)
        conn.execute(f"INSERT INTO {postgres_schema}.schema_migrations (version) VALUES (1)")
        for n, (user, content) in enumerate(
            [("u1", "walking the dogs in the park"), ("u2", "the dog walked home")], start=1
        ):
            conn.execute(
                f"INSERT INTO {postgres_schema}.memory_records (id, scope, kind, content, "
                "created_at, updated_at, search_text) VALUES (%s, %s, 'fact', %s, "
                f"now() - interval '{3 - n} seconds', now(), "
                f"to_tsvector('{postgres_schema}.memory_text'::regconfig, %s))",
                (f"r{n}", json.dumps({"user": user}), content, content),
            )
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        both = await store.search(MemorySearchQuery(query="walk the dog"))
        scoped = await store.search(MemorySearchQuery(query="walks", scope={"user": "u2"}))
        await store.write([MemoryWriteInput(scope={"user": "u3"}, content="a walk")])
        await store.delete("r1")
        after = await store.search(MemorySearchQuery(query="walk"))
    assert {hit.record.id for hit in both} == {"r1", "r2"}
    assert [hit.record.id for hit in scoped] == ["r2"]
    assert {hit.record.content for hit in after} == {"the dog walked home", "a walk"}
    with psycopg.connect(postgres_url) as conn:
        stems = conn.execute(
            f"SELECT search_text::text, search_length FROM {postgres_schema}.memory_records "
            "WHERE id = 'r2'"
        ).fetchone()
        totals = conn.execute(
            f"SELECT documents, tokens FROM {postgres_schema}.memory_totals"
        ).fetchone()
        frequencies: dict[str, int] = dict(
            conn.execute(f"SELECT stem, documents FROM {postgres_schema}.memory_stems").fetchall()
        )
    # Version 5 added the scope pair {"user": "u2"} as a lexeme; stems alone are counted.
    assert stems == ("'dog' 'home' 'scope:75736572=7532' 'the' 'walk'", 4)
    assert totals == (2, 4 + 2)
    # r1's words left with it ("park" only it held); "walk" is in r2 and the new record.
    assert frequencies == {"dog": 1, "home": 1, "the": 1, "walk": 2, "a": 1}


@pytest.mark.slow
async def test_connections_the_server_dropped_are_replaced_not_failed(
    postgres_url: str, postgres_schema: str
) -> None:
    # What a server restart or failover does to idle pooled connections.
    app = f"recallstore-{postgres_schema}"
    dsn = f"{postgres_url}?application_name={app}"
    async with PostgresMemoryStore(dsn, schema=postgres_schema, min_connections=2) as store:
        (record,) = await store.write([MemoryWriteInput(scope={"user": "u1"}, content="tea")])
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            (killed,) = conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (app,),
            ).fetchone() or (0,)
            # Once they are gone (their sockets closed), as after a restart.
            for _ in range(600):  # a bound, not a timing: each look is a query
                (left,) = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (app,)
                ).fetchone() or (0,)
                if left == 0:
                    break
        assert killed >= 1
        assert left == 0
        assert await store.get(record.id) == record
        hits = await store.search(MemorySearchQuery(query="tea", scope={"user": "u1"}))
        assert [hit.record for hit in hits] == [record]
        await store.write([MemoryWriteInput(scope={"user": "u1"}, content="coffee")])


async def test_every_call_on_a_closed_store_is_store_unavailable(
    postgres_url: str, postgres_schema: str
) -> None:
    store = PostgresMemoryStore(postgres_url, schema=postgres_schema)
    async with store:
        (record,) = await store.write([MemoryWriteInput(scope={}, content="tea")])
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: store.write([]),
        lambda: store.import_records([]),
        lambda: store.get(record.id),
        lambda: store.get("a\x00b"),
        lambda: store.invalidate(record.id),
        lambda: store.delete(record.id),
        lambda: store.search(MemorySearchQuery(query="tea")),
        lambda: store.search(MemorySearchQuery(limit=0)),
    ]
    for call in calls:
        with pytest.raises(StoreUnavailableError, match="not open"):
            await call()


async def test_concurrent_imports_of_one_batch_skip_or_conflict_never_leak_errors(
    postgres_url: str, postgres_schema: str
) -> None:
    # Two processes importing the same file: neither can lock ids that do not exist yet.
    async with InMemoryMemoryStore() as source:
        batch = await source.write(
            [MemoryWriteInput(scope={}, content=f"r {n}") for n in range(200)]
        )
    different = [record.model_copy(update={"content": "changed"}) for record in batch]
    async with (
        PostgresMemoryStore(postgres_url, schema=postgres_schema) as one,
        PostgresMemoryStore(postgres_url, schema=postgres_schema) as two,
    ):
        same = await asyncio.gather(one.import_records(batch), two.import_records(batch))
        assert sorted(same) == [0, len(batch)]
        fresh = [record.model_copy(update={"id": record.id + "-b"}) for record in batch]
        clash = [record.model_copy(update={"id": record.id + "-b"}) for record in different]
        outcomes = await asyncio.gather(
            one.import_records(fresh), two.import_records(clash), return_exceptions=True
        )
        assert len([o for o in outcomes if o == len(batch)]) == 1, outcomes
        assert len([o for o in outcomes if isinstance(o, MemoryConflictError)]) == 1, outcomes


async def test_a_failed_open_leaks_no_connection_and_leaves_the_store_closed(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema):
        pass  # the schema exists: the next open's first query reads memory_records
    marker = f"leak_{postgres_schema}"
    timing_out = f"{postgres_url}?application_name={marker}&options=-c%20lock_timeout%3D200"
    store = PostgresMemoryStore(timing_out, schema=postgres_schema)
    with psycopg.connect(postgres_url) as holder:
        holder.execute(f"LOCK TABLE {postgres_schema}.memory_records IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(StoreUnavailableError) as caught:
            await store.open()
        assert "lock timeout" in str(caught.value)
    with pytest.raises(StoreUnavailableError, match="not open"):
        await store.search(MemorySearchQuery(query="anything"))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (marker,)
        ).fetchone()
    assert left == (0,)
    # Nothing is left half-open: the same store opens once the lock is gone.
    async with store:
        assert await store.search(MemorySearchQuery(query="anything")) == []
