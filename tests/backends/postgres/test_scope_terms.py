"""A scope's common pairs checked on the rows instead of read by the GIN index (schema
version 19, ``postgres.scope_terms``): which pairs are read, when ``pg_stats`` is read
again, and searches, hybrid searches and listings that find the same records in the
same order as the in-memory store, a user of the same name in another tenant left out."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import psycopg
import pytest
from tests.backends.postgres.steady import steady

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.postgres.lexemes import scope_lexeme
from recallstore.backends.postgres.scope_terms import (
    COMMON_RATIO,
    REFRESH_SECONDS,
    SCOPE_CHECK,
    CommonPairs,
    PairFrequencies,
    ScopeTerms,
    scope_terms,
)
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore
from recallstore.testing import ToyEmbedder


def _lexeme(key: str, value: str) -> str:
    lexeme = scope_lexeme(key, value)
    assert lexeme is not None
    return lexeme


TENANT, USER, SESSION = _lexeme("tenant", "acme"), _lexeme("user", "ana"), _lexeme("session", "s1")


_SHARES = PairFrequencies({TENANT: 0.5, USER: 0.01, SESSION: 0.004}, floor=0.0005)


@pytest.mark.parametrize(
    ("scope", "frequencies", "expected"),
    [
        ({"user": "ana"}, _SHARES, ScopeTerms((USER,))),  # one pair: read
        ({"tenant": "acme", "user": "ana"}, None, ScopeTerms((TENANT, USER))),  # no shares
        ({"tenant": "acme", "user": "ana"}, PairFrequencies(), ScopeTerms((TENANT, USER))),
        ({"tenant": "acme", "user": "ana"}, _SHARES, ScopeTerms((USER,), f"'{TENANT}'")),
        ({"user": "ana", "tenant": "acme"}, _SHARES, ScopeTerms((USER,), f"'{TENANT}'")),
        # Within COMMON_RATIO of each other: both read.
        ({"user": "ana", "session": "s1"}, _SHARES, ScopeTerms((USER, SESSION))),
        (
            {"tenant": "acme", "user": "ana", "session": "s1"},
            _SHARES,
            ScopeTerms((USER, SESSION), f"'{TENANT}'"),
        ),
        # A pair not listed has at most the floor's share; one listed is never dropped
        # for a pair of unknown share above a tenth of its own.
        (
            {"tenant": "acme", "user": "bo"},
            _SHARES,
            ScopeTerms((_lexeme("user", "bo"),), f"'{TENANT}'"),
        ),
        (
            {"user": "ana", "team": "red"},
            _SHARES,
            ScopeTerms((_lexeme("team", "red"),), f"'{USER}'"),
        ),
        (
            {"user": "ana", "team": "red"},
            PairFrequencies({USER: 0.01}, floor=0.002),
            ScopeTerms((USER, _lexeme("team", "red"))),
        ),
        ({}, _SHARES, None),
        ({"tenant": "acme", "user": "x" * 2_000}, _SHARES, None),  # too long: scope @>
    ],
)
def test_the_index_reads_the_rare_pairs_and_the_rows_are_checked_for_the_common(
    scope: Mapping[str, str], frequencies: PairFrequencies | None, expected: ScopeTerms | None
) -> None:
    terms = scope_terms(scope, frequencies)
    assert terms == expected
    if terms is not None:
        assert terms.single == (terms.read[0] if len(terms.read) == 1 else None)
        assert COMMON_RATIO == 10.0  # the shares above are chosen around it


async def test_shares_are_read_again_after_the_refresh_interval(
    postgres_url: str, postgres_schema: str
) -> None:
    now = [0.0]
    common = CommonPairs(postgres_schema, clock=lambda: now[0])
    assert common.due
    assert common.frequencies == PairFrequencies()
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write(_inputs())
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await common.read(conn)  # before ANALYZE: no shares
        assert common.frequencies == PairFrequencies()
        assert not common.due
        await conn.execute(f"ANALYZE {postgres_schema}.memory_records")
        now[0] += REFRESH_SECONDS - 1
        assert not common.due
        now[0] += 1
        assert common.due
        await common.read(conn)
    shares = common.frequencies.shares
    assert shares[TENANT] > 0.9  # acme holds all but five of the records
    assert 0 < common.frequencies.floor <= min(shares.values())
    assert all(pair.startswith("scope:") for pair in shares)
    terms = scope_terms({"tenant": "acme", "user": "u7"}, common.frequencies)
    assert terms == ScopeTerms((_lexeme("user", "u7"),), f"'{TENANT}'")


_USERS = 600


def _inputs() -> list[MemoryWriteInput]:
    """600 users of tenant acme, 5 records each, and user ana in acme and in globex:
    acme's pair is in most records, every user's in few."""
    words = ["garden plan", "moving to lisbon", "garden party", "sister visits", "the plan"]
    inputs = [
        MemoryWriteInput(scope={"tenant": "acme", "user": f"u{n}"}, content=words[(n + i) % 5])
        for n in range(_USERS)
        for i in range(5)
    ]
    for tenant in ("acme", "globex"):
        inputs += [
            MemoryWriteInput(scope={"tenant": tenant, "user": "ana"}, content=f"{text} {tenant}")
            for text in words
        ]
    inputs.append(
        MemoryWriteInput(scope={"tenant": "acme", "user": "ana", "session": "s1"}, content="plan")
    )
    return inputs


_QUERIES = [
    MemorySearchQuery(query="garden plan", scope={"tenant": "acme", "user": "ana"}),
    MemorySearchQuery(query="garden plan", scope={"tenant": "globex", "user": "ana"}),
    MemorySearchQuery(query="plan", scope={"tenant": "acme", "user": "ana", "session": "s1"}),
    MemorySearchQuery(query="lisbon", scope={"tenant": "acme", "user": "u7"}),
    MemorySearchQuery(query="garden", scope={"user": "ana"}),
    MemorySearchQuery(scope={"tenant": "acme", "user": "ana"}, limit=50),
    MemorySearchQuery(scope={"tenant": "globex", "user": "ana"}, limit=3),
    MemorySearchQuery(scope={"tenant": "acme", "user": "ana"}, kinds=["episode"]),
    MemorySearchQuery(scope={"tenant": "acme", "user": "nobody"}),
]


async def _results(store: MemoryStore) -> list[list[str]]:
    found = []
    for query in _QUERIES:
        hits = await store.search(query)
        found.append([hit.record.id for hit in hits])
    return found


@pytest.mark.parametrize("embedded", [False, True], ids=["keyword", "hybrid"])
async def test_checked_pairs_find_what_the_in_memory_store_finds(
    postgres_url: str, postgres_schema: str, embedded: bool
) -> None:
    embedder = ToyEmbedder() if embedded else None
    reference = InMemoryMemoryStore(embedder=embedder, **steady(50))  # type: ignore[arg-type]
    async with reference:
        await reference.write(_inputs())
        expected = await _results(reference)
    async with PostgresMemoryStore(
        postgres_url,
        schema=postgres_schema,
        embedder=embedder,
        **steady(50),  # type: ignore[arg-type]
    ) as store:
        await store.write(_inputs())
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute(f"ANALYZE {postgres_schema}.memory_records")
    async with PostgresMemoryStore(
        postgres_url, schema=postgres_schema, embedder=embedder
    ) as store:
        terms = scope_terms({"tenant": "acme", "user": "ana"}, store._common.frequencies)
        assert terms == ScopeTerms((USER,), f"'{TENANT}'"), "the tenant's pair is checked"
        assert await _results(store) == expected
    globex = {hit for hits in expected[1:2] + expected[6:7] for hit in hits}
    assert globex
    assert not globex & set(expected[0] + expected[5])  # ana of globex is not ana of acme


async def test_the_index_condition_holds_the_rare_pair_and_the_filter_the_common(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write(_inputs())
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute(f"ANALYZE {postgres_schema}.memory_records")
        common = CommonPairs(postgres_schema)
        await common.read(conn)
        terms = scope_terms({"tenant": "acme", "user": "ana"}, common.frequencies)
        assert terms is not None
        await conn.execute("SET enable_seqscan = off")  # a small table: the index's plan
        cursor = await conn.execute(
            "EXPLAIN (FORMAT JSON) SELECT id FROM "
            f"{postgres_schema}.memory_records WHERE search_text @@ %s::tsquery AND {SCOPE_CHECK}",
            [f"{terms.indexed} & ('garden')", terms.checked],
        )
        row = await cursor.fetchone()
    assert row is not None
    plan = json.dumps(row[0])
    index_conditions = re.findall(r'"Index Cond": "([^"]*)"', plan)
    assert index_conditions
    assert all(USER in cond and TENANT not in cond for cond in index_conditions)
    assert re.search(rf'"Filter": "[^"]*ts_match_vq[^"]*{TENANT}', plan)
