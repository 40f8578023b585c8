"""A scope's broad pairs are checked on the rows FTS5 finds instead of read by it
(``sqlite.scope_split``): which pairs, for how long, and that searches find the same
records with the same scores as with every pair in the expression."""

import random
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore, ranked, scope_split, search
from recallstore.backends.sqlite.ranked import ranked_rows_now
from recallstore.backends.sqlite.scope_split import (
    COMMON_RATIO,
    PASS_SHARE,
    REFRESH_SECONDS,
    ScopeSplit,
    ScopeSplits,
    split_now,
)
from recallstore.backends.sqlite.search import Filter, FtsStatistics, narrowest_count_now

WORDS = [f"w{index}" for index in range(40)]


class WholeScopes(ScopeSplits):
    """Every pair in FTS5's expression: the search as it was before the split."""

    def split_now(
        self,
        db: sqlite3.Connection,
        scope: Mapping[str, str],
        narrowest: tuple[int, int] | None = None,
    ) -> ScopeSplit:
        return ScopeSplit(dict(scope), ())


def inputs(rng: random.Random, scope: dict[str, str], count: int) -> list[MemoryWriteInput]:
    return [
        MemoryWriteInput(
            scope=scope,
            content=" ".join(rng.choices(WORDS, k=rng.randint(2, 9))),
            tags=["even"] if rng.random() < 0.5 else [],
        )
        for _ in range(count)
    ]


async def build(db: Path) -> None:
    """Tenant t0: 6,200 records, of users solo (200), small (60), mid (1,400) and shared
    (150); tenant t1: users small (300) and shared (1,300), names of users of t0."""
    rng = random.Random(3)
    batches = [
        inputs(rng, {"tenant": "t0", "user": "solo"}, 200),
        inputs(rng, {"tenant": "t0", "user": "small"}, 60),
        inputs(rng, {"tenant": "t0", "user": "mid"}, 1_400),
        inputs(rng, {"tenant": "t0", "user": "shared"}, 150),
        inputs(rng, {"tenant": "t1", "user": "small"}, 300),
        inputs(rng, {"tenant": "t1", "user": "shared"}, 1_300),
    ]
    batches += [inputs(rng, {"tenant": "t0", "user": f"other{n}"}, 20) for n in range(219)]
    writes = [record for batch in batches for record in batch]
    rng.shuffle(writes)
    async with SqliteMemoryStore(db, journal=None) as store:
        for start in range(0, len(writes), 1_000):
            await store.write(writes[start : start + 1_000])
        # Some of the best matches invalidated: the filters drop rows FTS5 ranks first.
        for hit in await store.search(
            MemorySearchQuery(query="w1 w2", scope={"tenant": "t0", "user": "mid"}, limit=30)
        ):
            await store.invalidate(hit.record.id, "test")


@pytest.fixture(scope="module")
def store_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    db = tmp_path_factory.mktemp("split") / "memory.db"
    asyncio.run(build(db))
    return db


def test_which_pairs_are_checked(store_file: Path) -> None:
    conn = sqlite3.connect(store_file)
    try:
        cases = [
            ({}, {}, ()),
            ({"user": "small"}, {"user": "small"}, ()),
            # 200 records of user solo, all of them t0's 6,200: t0 is checked.
            ({"tenant": "t0", "user": "solo"}, {"user": "solo"}, (("tenant", "t0"),)),
            ({"user": "solo", "tenant": "t0"}, {"user": "solo"}, (("tenant", "t0"),)),
            ({"tenant": "t0", "user": "mid"}, {"user": "mid"}, (("tenant", "t0"),)),
            # Most of user small's 360 records are t1's: t0 would drop them, so it is read.
            ({"tenant": "t0", "user": "small"}, {"tenant": "t0", "user": "small"}, ()),
            # t1's 1,600 records beside user shared's 1,450: within the ratio, read.
            ({"tenant": "t1", "user": "shared"}, {"tenant": "t1", "user": "shared"}, ()),
            ({"tenant": "t0", "user": "nobody"}, {"user": "nobody"}, (("tenant", "t0"),)),
            (
                {"tenant": "t0", "user": "solo", "team": "absent"},
                {"team": "absent"},
                (("tenant", "t0"), ("user", "solo")),
            ),
        ]
        for scope, indexed, checked in cases:
            split = split_now(conn, scope)
            assert (split.indexed, split.checked) == (indexed, checked), scope
            # As a search splits it, given the narrowest pair it counted.
            pairs: list[Filter] = [("scope", pair) for pair in scope.items()]
            narrowest = narrowest_count_now(conn, pairs, 1_000)
            if narrowest is not None:
                assert split_now(conn, scope, narrowest) == split, scope
    finally:
        conn.close()


def test_scopes_past_the_counted_limit_are_left_whole(
    store_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scope_split, "COUNTED_LIMIT", 100)
    conn = sqlite3.connect(store_file)
    try:
        # user solo (200) and t0 are both past 100: counting them is not worth it.
        assert split_now(conn, {"tenant": "t0", "user": "solo"}).checked == ()
        assert split_now(conn, {"tenant": "t0", "user": "nobody"}).checked == (("tenant", "t0"),)
    finally:
        conn.close()


def queries() -> list[MemorySearchQuery]:
    rng = random.Random(5)
    scopes = [
        {"tenant": "t0", "user": "solo"},
        {"tenant": "t0", "user": "small"},
        {"tenant": "t1", "user": "small"},
        {"tenant": "t0", "user": "mid"},
        {"tenant": "t0", "user": "shared"},
        {"tenant": "t1", "user": "shared"},
        {"tenant": "t0", "user": "nobody"},
    ]
    found = []
    for scope in scopes:
        for _ in range(12):
            text = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
            found.append(MemorySearchQuery(query=text, scope=scope, limit=rng.choice([5, 100])))
        found.append(
            MemorySearchQuery(query="w1 w2", scope=scope, limit=10, include_invalidated=True)
        )
        found.append(MemorySearchQuery(query="w5 w6", scope=scope, limit=20, tags=["even"]))
    return found


@pytest.mark.parametrize("share", [PASS_SHARE, 0.0])
async def test_searches_find_what_the_whole_expression_finds(
    store_file: Path, monkeypatch: pytest.MonkeyPatch, share: float
) -> None:
    # At a share of 0, pairs are checked that drop most of FTS5's best: the searches
    # of t0's users small and shared then go to the full join, and must agree too.
    monkeypatch.setattr(scope_split, "PASS_SHARE", share)
    joined: list[int] = []
    original = ranked._best_joined_now

    def counted(*args: object, **kwargs: object) -> object:
        joined.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ranked, "_best_joined_now", counted)
    now = datetime.now(UTC)
    conn = sqlite3.connect(store_file)
    checked = 0
    try:
        async with SqliteMemoryStore(store_file, journal=None) as store:
            for query in queries():
                split = split_now(conn, query.scope)
                checked += bool(split.checked)
                whole = ranked_rows_now(conn, query, now, FtsStatistics(), WholeScopes())
                mine = ranked_rows_now(conn, query, now, FtsStatistics(), ScopeSplits())
                assert mine == whole, query
                hits = await store.search(query)
                assert [(hit.record.id, hit.score) for hit in hits] == [
                    (row[0], score) for score, row in whole
                ], query
                assert all(hit.record.scope == query.scope for hit in hits)
    finally:
        conn.close()
    if share:  # t0's users solo, mid and nobody
        assert checked == 3 * 14
    else:  # all but t1's user shared, within the ratio
        assert checked == 6 * 14
        assert joined


async def test_a_checked_pair_keeps_other_tenants_records_out(
    store_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scope_split, "PASS_SHARE", 0.0)  # t0 and t1 checked for small
    async with SqliteMemoryStore(store_file, journal=None) as store:
        for tenant, count in (("t0", 60), ("t1", 300)):
            scope = {"tenant": tenant, "user": "small"}
            hits = await store.search(MemorySearchQuery(query=" ".join(WORDS), scope=scope))
            assert hits
            assert all(hit.record.scope == scope for hit in hits)
            listed = await store.search(
                MemorySearchQuery(query=" ".join(WORDS), scope=scope, limit=1_000)
            )
            assert len(listed) == count


async def test_a_split_is_kept_for_its_time_then_counted_again(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    rng = random.Random(9)
    user = {"tenant": "t", "user": "u"}
    async with SqliteMemoryStore(db, journal=None) as store:
        await store.write(inputs(rng, user, 100))
        await store.write(inputs(rng, {"tenant": "t", "user": "v"}, 100))
    clock = [1_000.0]
    splits = ScopeSplits(clock=lambda: clock[0])
    conn = sqlite3.connect(db)
    try:
        first = splits.split_now(conn, user)
        assert first.checked == ()  # 200 beside 100: within the ratio of 2
        async with SqliteMemoryStore(db, journal=None) as store:
            await store.write(inputs(rng, {"tenant": "t", "user": "w"}, COMMON_RATIO * 100))
        clock[0] += REFRESH_SECONDS - 1
        assert splits.split_now(conn, user) is first
        clock[0] += 1
        assert splits.split_now(conn, user).checked == (("tenant", "t"),)
    finally:
        conn.close()


async def test_fts5_is_asked_for_the_indexed_pairs_only(
    store_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[dict[str, str]] = []
    original = search.match_expression

    def recorded(scope: dict[str, str], *args: Any) -> str:
        asked.append(dict(scope))
        return original(scope, *args)

    monkeypatch.setattr(ranked, "match_expression", recorded)
    async with SqliteMemoryStore(store_file, journal=None) as store:
        for user in ("solo", "mid"):  # the exhaustive path and FTS5's best
            scope = {"tenant": "t0", "user": user}
            assert await store.search(MemorySearchQuery(query="w3 w4", scope=scope))
            assert asked[-1] == {"user": user}
        scope = {"tenant": "t1", "user": "shared"}
        assert await store.search(MemorySearchQuery(query="w3 w4", scope=scope))
        assert asked[-1] == scope
