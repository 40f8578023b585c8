"""Max-score pruning of broad keyword searches (``sqlite.pruning``, issue 38).

A search broader than ``EXHAUSTIVE_SCOPE`` re-scores FTS5's best matches; pruning finds
them from the rarest words' doclists only, computing FTS5's bm25() in Python. Every
answer must be the one FTS5's own ordering gives: the same ids, order and scores, for
every scope, filter and limit, ties and text FTS5 counts otherwise included. Each case
below runs many random queries with pruning on and off on one real SQLite file, and
checks that pruning did answer a share of them (else the comparison proves nothing).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore, pruning
from recallstore.backends.sqlite.driver import choose_sqlite
from recallstore.records import MemoryKind

FAST = choose_sqlite("auto")
DRIVERS = [
    pytest.param("stdlib", id="stdlib"),
    pytest.param(
        FAST.name,
        id="fast",
        marks=pytest.mark.skipif(FAST.name == "stdlib", reason="no SQLite 3.42+ driver"),
    ),
]

COMMON = ["apple", "river", "stone", "cloud"]
MIDDLE = [f"meadow{index}" for index in range(12)]
RARE = [f"zephyr{index}" for index in range(8)]
WORDS = set(MIDDLE + RARE)
KINDS: list[MemoryKind] = ["fact", "preference", "episode"]
START = datetime(2026, 1, 1, tzinfo=UTC)


def _corpus(seed: int, records: int = 4_000) -> list[MemoryWriteInput]:
    """Records of two tenants (70 % / 30 %) and 20 users, 1 to 13 words each (so row
    lengths differ): common words in about a third each, middle and rarer ones in a
    few percent (often enough to fill a search's candidates alone). Every twentieth
    record repeats an earlier one's text and scope (equal scores, ordered by write);
    some have a third scope pair (a longer row), some non-ASCII text (which pruning
    leaves to FTS5: a fifth of the records whose only middle or rare word is the last
    rare word, a few holding none), some expire."""
    rng = random.Random(seed)
    made: list[MemoryWriteInput] = []
    for index in range(records):
        if index % 20 == 19 and made:
            twin = rng.choice(made)
            made.append(MemoryWriteInput(scope=twin.scope, content=twin.content))
            continue
        words = [rng.choice(COMMON) for _ in range(rng.randint(0, 4))]
        words += [rng.choice(MIDDLE) for _ in range(rng.randint(0, 2))]
        words += [rng.choice(RARE) for _ in range(rng.random() < 0.6)]
        words += ["filler", "words", "here", "more", "text"][: rng.randint(1, 5)]
        if rng.random() < 0.2:
            words.append(words[0])  # a word twice
        rng.shuffle(words)
        user = rng.randrange(20)
        scope = {"tenant": "t0" if user < 14 else "t1", "user": f"u{user}"}
        if rng.random() < 0.1:
            scope["project"] = "p1"
        content = " ".join(words)
        others = set(words) & (WORDS - {RARE[-1]})
        if not others and rng.random() < (0.2 if RARE[-1] in words else 0.01):
            content += " café"  # text pruning leaves to FTS5
        made.append(
            MemoryWriteInput(
                scope=scope,
                content=content,
                kind=rng.choice(KINDS),
                observed_at=START + timedelta(hours=index),
                expires_at=START if rng.random() < 0.02 else None,
            )
        )
    return made


@dataclass
class Case:
    """A family of random queries: their shape, scope, filters and limit."""

    name: str
    scopes: list[dict[str, str]]
    shape: tuple[int, int, int]  # how many common, middle and rare words
    limit: int = 10
    filters: dict[str, Any] = field(default_factory=dict)
    min_pruned: float = 0.2  # the share of queries pruning must have answered


CASES = [
    Case("rare and common, unscoped", [{}], (1, 0, 1)),
    Case("rare and common, tenant", [{"tenant": "t0"}], (1, 0, 1)),
    Case("two commons and a rare", [{}, {"tenant": "t0"}], (2, 0, 1), min_pruned=0.05),
    Case("middle and common", [{}, {"tenant": "t0"}], (1, 1, 0), min_pruned=0.05),
    Case("two rares and commons", [{}, {"tenant": "t0"}], (2, 0, 2), min_pruned=0.05),
    Case("limit 1", [{}, {"tenant": "t0"}], (1, 0, 1), limit=1),
    Case("limit 100", [{}], (1, 0, 1), limit=100),
    Case("limit 151", [{}], (1, 0, 1), limit=151, min_pruned=0.0),
    Case("kinds", [{}, {"tenant": "t0"}], (1, 0, 1), filters={"kinds": ("fact",)}),
    Case(
        "observed window",
        [{}, {"tenant": "t0"}],
        (1, 0, 1),
        filters={"observed_after": START + timedelta(hours=500)},
    ),
    Case("invalidated included", [{}], (1, 0, 1), filters={"include_invalidated": True}),
    Case("expired included", [{}], (1, 0, 1), filters={"include_expired": True}),
    Case("two pairs", [{"tenant": "t0", "project": "p1"}], (1, 0, 1), min_pruned=0.0),
    Case("user scope (every match scored)", [{"user": "u3"}], (1, 0, 1), min_pruned=0.0),
    Case("commons only", [{}], (2, 0, 0), min_pruned=0.0),
    Case("one word", [{}], (1, 0, 0), min_pruned=0.0),
]


def _queries(case: Case, rng: random.Random, count: int) -> Iterator[MemorySearchQuery]:
    commons, middles, rares = case.shape
    for _ in range(count):
        words = rng.sample(COMMON, commons) + rng.sample(MIDDLE, middles)
        words += rng.sample(RARE, rares)
        rng.shuffle(words)
        if rng.random() < 0.1:
            words.append("the")  # a stop word: dropped by the query plan
        yield MemorySearchQuery(
            query=" ".join(words), scope=rng.choice(case.scopes), limit=case.limit, **case.filters
        )


class _Counter:
    def __init__(self) -> None:
        self.asked = 0
        self.answered = 0
        self._real = pruning.best_pruned_now

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.asked += pruning._ENABLED
        found = self._real(*args, **kwargs)
        self.answered += found is not None
        return found


async def _answers(store: SqliteMemoryStore, query: MemorySearchQuery) -> list[tuple[str, float]]:
    hits = await store.search(query)
    return [(hit.record.id, round(hit.score or 0.0, 12)) for hit in hits]


@pytest.mark.parametrize("driver", DRIVERS)
async def test_pruned_searches_answer_as_fts5_does(
    tmp_path: Path, driver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(38)
    counter = _Counter()
    monkeypatch.setattr("recallstore.backends.sqlite.ranked.best_pruned_now", counter)
    async with SqliteMemoryStore(tmp_path / "broad.db", sqlite_driver=driver) as store:
        written = await store.write(_corpus(seed=38))
        touched = rng.sample(written, 180)
        for record in touched[:150]:
            await store.invalidate(record.id, reason="test")
        for record in touched[150:]:
            await store.delete(record.id)  # FTS5's totals and memory_terms both change
        failures = []
        for case in CASES:
            asked, answered = counter.asked, counter.answered
            for query in _queries(case, rng, 40):
                monkeypatch.setattr(pruning, "_ENABLED", True)
                pruned = await _answers(store, query)
                monkeypatch.setattr(pruning, "_ENABLED", False)
                unpruned = await _answers(store, query)
                if pruned != unpruned:
                    failures.append((case.name, query.query, query.scope, pruned, unpruned))
            share = (counter.answered - answered) / max(counter.asked - asked, 1)
            assert share >= case.min_pruned, (case.name, share)
        assert not failures, failures[:3]
        assert counter.answered > 100  # pruning answered many of the searches compared


@pytest.mark.parametrize("driver", DRIVERS)
async def test_pruned_matches_are_fts5s_best_with_its_scores(tmp_path: Path, driver: str) -> None:
    """Below the ranking: the (rowid, bm25) list pruning returns is FTS5's own
    ``ORDER BY bm25(), rowid DESC LIMIT room``, each score the same double."""
    from recallstore._search.query import plan_query
    from recallstore.backends.sqlite.ranked import _BEST_MATCHES
    from recallstore.backends.sqlite.rows import on_thread
    from recallstore.backends.sqlite.search import FtsStatistics, match_expression

    rng = random.Random(7)
    async with SqliteMemoryStore(tmp_path / "best.db", sqlite_driver=driver) as store:
        await store.write(_corpus(seed=7))
        statistics = FtsStatistics()
        compared = 0

        def compare(db: Any, text: str, scope: dict[str, str], room: int) -> bool:
            terms = plan_query(text)
            statistics.refresh_now(db)
            figures = statistics.figures_now(db, [term.stem for term in terms])
            assert figures is not None
            found = pruning.best_pruned_now(db, scope, [t.word for t in terms], figures, room)
            expected = db.execute(_BEST_MATCHES, (match_expression(scope, terms, text), room))
            if found is None:
                return False
            assert found == [(int(rowid), score) for rowid, score in expected.fetchall()]
            return True

        assert store._conn is not None
        for _ in range(200):
            words = [rng.choice(COMMON), rng.choice(MIDDLE + RARE)]
            words += rng.sample(COMMON + RARE, rng.randint(0, 2))
            scope = rng.choice([{}, {"tenant": "t0"}, {"tenant": "t1"}])
            room = rng.choice([1, 15, 150, 300])
            compared += await on_thread(store._conn, compare, " ".join(words), scope, room)
        assert compared > 40


@pytest.mark.parametrize("driver", DRIVERS)
async def test_fts5_bm25_is_ftss_own_double(tmp_path: Path, driver: str) -> None:
    """``fts5_bm25`` gives bm25()'s value bit for bit on every row of broad searches."""
    from recallstore._search.query import plan_query
    from recallstore.backends.sqlite.pruning import _MATCH, _column_sizes, _stems, fts5_bm25
    from recallstore.backends.sqlite.rows import on_thread
    from recallstore.backends.sqlite.search import FtsStatistics, match_expression

    async with SqliteMemoryStore(tmp_path / "bm25.db", sqlite_driver=driver) as store:
        await store.write(_corpus(seed=3, records=1_500))
        statistics = FtsStatistics()

        def check(db: Any, text: str, scope: dict[str, str]) -> int:
            terms = plan_query(text)
            statistics.refresh_now(db)
            figures = statistics.figures_now(db, [term.stem for term in terms])
            assert figures is not None
            expression = match_expression(scope, terms, text)
            fts5 = dict(
                db.execute(
                    "SELECT rowid, bm25(memory_fts, 1.0, 0.0) FROM memory_fts "
                    "WHERE memory_fts MATCH ?",
                    (expression,),
                ).fetchall()
            )
            idfs = [figures.idf(term.stem) for term in terms]
            rows = 0
            for rowid, sizes, content in db.execute(_MATCH, (expression,)).fetchall():
                counted = _stems(content)
                if counted is None:
                    continue
                counts = [counted[0].get(term.stem, 0) for term in terms]
                mine = fts5_bm25(idfs, counts, sum(_column_sizes(sizes)), figures.average)
                assert mine == fts5[rowid], (text, rowid, mine, fts5[rowid])
                rows += 1
            return rows

        assert store._conn is not None
        checked = 0
        for text in ["apple zephyr3", "river meadow2 zephyr9 apple", "cloud stone", "meadow5"]:
            for scope in [{}, {"tenant": "t1"}, {"tenant": "t0", "project": "p1"}]:
                checked += await on_thread(store._conn, check, text, scope)
        assert checked > 1_000
