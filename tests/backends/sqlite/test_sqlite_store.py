"""SqliteMemoryStore semantics on a real database file (beyond the shared kit)."""

import random
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from recallstore import (
    MemoryConflictError,
    MemoryNotFoundError,
    MemorySearchQuery,
    MemoryTarget,
    MemoryWriteInput,
    Provenance,
    StoreUnavailableError,
)
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.backends.sqlite import search as sqlite_search
from recallstore.backends.sqlite.search import (
    choose_driver_now,
    filters_of,
    listing_sql,
)
from recallstore.store import MemoryStore


def fact(content: str, scope: dict[str, str] | None = None, **fields: Any) -> MemoryWriteInput:
    return MemoryWriteInput(
        scope=scope or {"tenant": "acme", "user": "u1"}, content=content, **fields
    )


async def row_count(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        count = conn.execute("SELECT count(*) FROM memory_records").fetchone()[0]
    conn.close()
    return int(count)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteMemoryStore]:
    async with SqliteMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


async def test_limit_zero_returns_nothing(store: SqliteMemoryStore) -> None:
    await store.write([fact("Alice drinks green tea")])
    assert await store.search(MemorySearchQuery(query="tea", limit=0)) == []
    assert await store.search(MemorySearchQuery(limit=0)) == []
    assert len(await store.search(MemorySearchQuery(query="tea", limit=1))) == 1


async def test_tenant_filter_finds_tenant_wide_and_per_user_records(
    store: SqliteMemoryStore,
) -> None:
    tenant_wide, per_user, _ = await store.write(
        [
            fact("acme ships on fridays", {"tenant": "acme"}),
            fact("u1 prefers fridays off", {"tenant": "acme", "user": "u1"}),
            fact("globex works fridays", {"tenant": "globex", "user": "u1"}),
        ]
    )
    listed = await store.search(MemorySearchQuery(scope={"tenant": "acme"}))
    searched = await store.search(MemorySearchQuery(query="fridays", scope={"tenant": "acme"}))
    expected = {tenant_wide.id, per_user.id}
    assert {hit.record.id for hit in listed} == expected
    assert {hit.record.id for hit in searched} == expected
    only_user = await store.search(MemorySearchQuery(scope={"tenant": "acme", "user": "u1"}))
    assert [hit.record.id for hit in only_user] == [per_user.id]


async def test_superseding_an_invalidated_record_conflicts_and_writes_nothing(
    store: SqliteMemoryStore,
) -> None:
    old = (await store.write([fact("Alice lives in Paris")]))[0]
    await store.invalidate(old.id, "moved")
    before = await row_count(store.path)
    with pytest.raises(MemoryConflictError) as caught:
        await store.write([fact("harmless extra"), fact("Alice lives in Rome", supersedes=old.id)])
    assert caught.value.record_id == old.id
    assert await row_count(store.path) == before
    unchanged = await store.get(old.id)
    assert unchanged is not None
    assert unchanged.invalid_reason == "moved"
    assert unchanged.superseded_by is None


async def test_superseding_a_missing_record_writes_nothing(store: SqliteMemoryStore) -> None:
    with pytest.raises(MemoryNotFoundError):
        await store.write([fact("first"), fact("second", supersedes="no-such-id")])
    assert await row_count(store.path) == 0


async def test_supersede_sets_the_chain_in_the_same_write(store: SqliteMemoryStore) -> None:
    old = (await store.write([fact("Alice lives in Paris")]))[0]
    new = (await store.write([fact("Alice lives in Rome", supersedes=old.id)]))[0]
    stored_old = await store.get(old.id)
    assert stored_old is not None
    assert stored_old.superseded_by == new.id
    assert stored_old.invalid_at == new.created_at
    assert stored_old.updated_at == new.created_at
    hits = await store.search(MemorySearchQuery(query="Alice lives"))
    assert [hit.record.id for hit in hits] == [new.id]


FTS_SYNTAX_QUERIES = [
    '"',
    '"unbalanced',
    "*",
    "tea*",
    "NEAR(",
    "NEAR(tea green, 2)",
    "-",
    "-tea",
    ":",
    "content:tea",
    "(",
    ")",
    "(tea",
    "AND",
    "OR",
    "NOT",
    "tea AND",
    "OR tea NOT",
    "\x00",
    "tea\x00green",
    "🍵",
    "🍵 tea",
    "绿茶",
    "緑茶を飲む",
    "^tea",
    "{content}: tea",
    "'; DROP TABLE memory_records; --",
    "\\",
    "+",
    "\u200b",
]


@pytest.mark.parametrize("text", FTS_SYNTAX_QUERIES)
async def test_fts_syntax_in_a_query_never_raises(store: SqliteMemoryStore, text: str) -> None:
    await store.write([fact("Alice drinks green tea"), fact("绿茶 is green tea")])
    hits = await store.search(MemorySearchQuery(query=text))
    for hit in hits:
        assert hit.score is not None
    assert await row_count(store.path) == 2


async def test_random_syntax_soup_never_raises(store: SqliteMemoryStore) -> None:
    await store.write([fact("Alice drinks green tea near the harbour")])
    alphabet = [*'"*()-:^+{}[]\\\x00 ', "NEAR", "AND", "OR", "NOT", "tea", "🍵", "茶", "é"]
    rng = random.Random(20261129)
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        await store.search(MemorySearchQuery(query=text))


async def test_query_without_any_word_returns_nothing(store: SqliteMemoryStore) -> None:
    await store.write([fact("Alice drinks green tea")])
    assert await store.search(MemorySearchQuery(query="?!* -- ()")) == []


async def test_ranking_prefers_rarer_and_more_terms_and_stems(store: SqliteMemoryStore) -> None:
    common = [fact(f"note {i}: the team met again") for i in range(6)]
    rare, both = await store.write(
        [fact("the kayak trip is booked"), fact("kayak and team dinner planned")]
    )
    await store.write(common)
    hits = await store.search(MemorySearchQuery(query="Kayak, TEAM!"))
    assert [hit.record.id for hit in hits[:2]] == [both.id, rare.id]
    scores = [hit.score for hit in hits]
    assert all(score is not None for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    stemmed = await store.search(MemorySearchQuery(query="booking"))
    assert [hit.record.id for hit in stemmed] == [rare.id]


async def test_filters_kinds_tags_invalidated_and_expired(store: SqliteMemoryStore) -> None:
    past = datetime.now(UTC) - timedelta(days=1)
    tagged, untagged, expired, invalid = await store.write(
        [
            fact("tea one", tags=["drink", "hot"], kind="preference"),
            fact("tea two", tags=["drink"]),
            fact("tea three", expires_at=past),
            fact("tea four"),
        ]
    )
    await store.invalidate(invalid.id, "wrong")

    async def ids(**fields: Any) -> set[str]:
        return {hit.record.id for hit in await store.search(MemorySearchQuery(**fields))}

    assert await ids(tags=["drink", "hot"]) == {tagged.id}
    assert await ids(query="tea", tags=["drink"]) == {tagged.id, untagged.id}
    assert await ids(kinds=["preference"]) == {tagged.id}
    assert await ids(kinds=[]) == set()
    assert await ids(query="tea") == {tagged.id, untagged.id}
    assert expired.id in await ids(include_expired=True)
    assert invalid.id in await ids(query="tea", include_invalidated=True)


async def test_every_field_survives_reopen(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    written = MemoryWriteInput(
        scope={"tenant": "acme", "user": "ü1"},
        kind="profile",
        content="Prefers metric units 📏",
        tags=["units", "prefs"],
        provenance=Provenance(conversation_id="c1", run_id="r1", author="agent"),
        expires_at=datetime(2031, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        target=MemoryTarget(section="profile", key="units"),
        payload={"units": "metric", "nested": [1, 2.5, None, True]},
        supports=[Provenance(conversation_id="c0")],
    )
    async with SqliteMemoryStore(db) as store:
        record = (await store.write([written]))[0]
    async with SqliteMemoryStore(db) as store:
        assert await store.get(record.id) == record
        listed = await store.search(MemorySearchQuery(scope={"user": "ü1"}))
    assert [hit.record for hit in listed] == [record]


async def test_timestamps_stay_monotonic_across_reopen(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        first = (await store.write([fact("written now")]))[0]

    def stuck_in_the_past() -> datetime:
        return datetime(2001, 1, 1, tzinfo=UTC)

    async with SqliteMemoryStore(db, clock=stuck_in_the_past) as store:
        second = (await store.write([fact("written with a clock in the past")]))[0]
        listed = await store.search(MemorySearchQuery(include_expired=True))
    assert second.created_at > first.created_at
    assert [hit.record.id for hit in listed] == [second.id, first.id]


async def test_calls_on_an_unopened_or_closed_store_fail_clearly(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "memory.db")
    with pytest.raises(StoreUnavailableError, match="not open"):
        await store.get("x")
    async with store:
        await store.write([fact("x")])
    with pytest.raises(StoreUnavailableError, match="not open"):
        await store.write([fact("y")])
    with pytest.raises(StoreUnavailableError, match="not open"):
        await store.search(MemorySearchQuery(limit=0))


async def _plan(db: Path, query: MemorySearchQuery) -> tuple[str, int | None]:
    """The query plan the store would use for listing ``query`` on ``db``, and its driver."""
    filters = filters_of(query)
    with closing(sqlite3.connect(db)) as conn:
        driver = choose_driver_now(conn, filters)
        sql, params = listing_sql(query, datetime.now(UTC), filters, driver)
        rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
    return "\n".join(str(row[3]) for row in rows), driver


@pytest.fixture
async def populated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """3,000 records over 2 tenants and 3,000 users; every third one tagged "drink".

    The driver cap is lowered so a tenant (1,500 rows) counts as broad at this size.
    """
    monkeypatch.setattr(sqlite_search, "DRIVER_CAP", 1_000)
    db = tmp_path / "memory.db"
    async with SqliteMemoryStore(db) as store:
        await store.write(
            [
                fact(
                    f"tea note {i}",
                    {"tenant": f"t{i % 2}", "user": f"u{i}"},
                    tags=["drink"] if i % 3 == 0 else [],
                )
                for i in range(3000)
            ]
        )
    return db


async def test_a_selective_scope_pair_drives_the_listing_through_its_index(
    populated: Path,
) -> None:
    query = MemorySearchQuery(scope={"tenant": "t1", "user": "u9"}, tags=["drink"])
    plan, driver = await _plan(populated, query)
    assert driver == 1  # "user" matches 1 row, "tenant" 1,500, the tag 1,000
    assert "SEARCH d USING PRIMARY KEY (key=? AND value=?)" in plan
    # The other pair is checked in the record's own scope column, not in memory_scope.
    assert "SCAN json_each VIRTUAL TABLE" in plan, plan
    assert plan.count("memory_scope") == 0, plan
    # Newest first from the index: only ties on the microsecond are sorted.
    assert "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY" in plan
    assert "SEARCH memory_tags USING PRIMARY KEY (record_seq=? AND tag=?)" in plan
    assert "SCAN memory_scope" not in plan
    assert "SCAN memory_tags" not in plan
    assert "SCAN r" not in plan, plan


async def test_a_selective_tag_drives_through_the_tag_index(populated: Path) -> None:
    async with SqliteMemoryStore(populated) as store:
        await store.write([fact("rare", {"tenant": "t1"}, tags=["rare-tag"])])
    plan, driver = await _plan(
        populated, MemorySearchQuery(scope={"tenant": "t1"}, tags=["rare-tag"])
    )
    assert driver == 1
    assert "SEARCH memory_tags USING COVERING INDEX memory_tags_by_tag (tag=?)" in plan
    assert "SCAN memory_tags" not in plan


async def test_a_broad_scope_pair_still_drives_newest_first(populated: Path) -> None:
    plan, driver = await _plan(populated, MemorySearchQuery(scope={"tenant": "t1"}))
    assert driver == 0  # 1,500 rows, but read newest first and only up to the limit
    assert "SEARCH d USING PRIMARY KEY (key=? AND value=?)" in plan
    assert "USE TEMP B-TREE FOR ORDER BY" not in plan
    assert "SCAN" not in plan


async def test_a_broad_tag_alone_walks_recency_and_checks_by_primary_key(
    populated: Path,
) -> None:
    plan, driver = await _plan(populated, MemorySearchQuery(tags=["drink"]))
    assert driver is None  # 1,000 rows, above the lowered cap
    assert "SCAN r USING INDEX memory_records_recency" in plan
    assert "SEARCH memory_tags USING PRIMARY KEY (record_seq=? AND tag=?)" in plan
    assert "SCAN memory_tags" not in plan


async def test_driver_choice_never_changes_results(populated: Path) -> None:
    async with SqliteMemoryStore(populated) as store:
        for query in [
            MemorySearchQuery(scope={"tenant": "t1"}, tags=["drink"], limit=1000),
            MemorySearchQuery(query="tea 42", scope={"tenant": "t0"}, tags=["drink"], limit=1000),
            MemorySearchQuery(scope={"user": "u42", "tenant": "t0"}),
        ]:
            hits = await store.search(query)
            expected = [
                i
                for i in range(3000)
                if query.scope.items() <= {"tenant": f"t{i % 2}", "user": f"u{i}"}.items()
                and (i % 3 == 0 or not query.tags)
            ]
            assert sorted(int(hit.record.content.split()[-1]) for hit in hits) == expected


@pytest.mark.parametrize(
    ("content", "query"),
    [("Meet at the Straße corner", "STRAßE"), ("ﬁsh market", "ﬁsh"), ("Café Noir", "cafe")],
)
async def test_words_fts5_folds_differently_still_match(
    store: SqliteMemoryStore, content: str, query: str
) -> None:
    record = (await store.write([fact(content)]))[0]
    hits = await store.search(MemorySearchQuery(query=query))
    assert [hit.record.id for hit in hits] == [record.id]


def test_it_is_a_memory_store(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "memory.db")
    assert isinstance(store, MemoryStore)
    assert store.capabilities().durable
    assert store.capabilities().search == "keyword"
