"""A scoped keyword search counts its candidates' stems (the feedback words') on the
server only when the store's cached counts are of another state (schema version 18),
and a write that lands between a search's statements sends it round again, so every
search ranks with the counts of one state: the same hits and scores as a cold store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
import pytest

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.postgres.search import (
    ALWAYS_COUNTED,
    PostgresStatistics,
    StatisticsMoved,
)
from recallstore.records import MemorySearchQuery, MemoryWriteInput

_TOPICS = ["garden tomatoes", "river kayak", "piano lessons", "garden roses", "tax forms"]
_INPUTS = [
    MemoryWriteInput(
        scope={"user": f"u{n % 3}"},
        content=f"note {n}: {_TOPICS[n % 5]} and {_TOPICS[(n * 7) % 5]}, week {n % 11}",
    )
    for n in range(600)  # "garden" in about 140 of each user's 200 records
]
_QUERIES = ["garden tomatoes", "kayak on the river", "piano week 3", "roses and forms"]


def _hits(hits: Sequence[Any]) -> list[tuple[str, float | None]]:
    return [(hit.record.id, hit.score) for hit in hits]


async def _search_all(store: PostgresMemoryStore) -> list[list[tuple[str, float | None]]]:
    return [
        _hits(await store.search(MemorySearchQuery(query=text, scope={"user": "u1"})))
        for text in _QUERIES
    ]


async def test_a_warm_cache_ranks_as_a_cold_one(postgres_url: str, postgres_schema: str) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write(_INPUTS)
        warm = [await _search_all(store) for _ in range(3)]  # cold, then warm twice
    assert warm[0] == warm[1] == warm[2]
    assert all(len(hits) == 10 for hits in warm[0])
    assert len(_INPUTS) // 3 > ALWAYS_COUNTED  # so the warm searches skip the count
    for text, hits in zip(_QUERIES, warm[0], strict=True):
        # Each query alone on a store that knows nothing yet: the same hits and scores.
        async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as cold:
            query = MemorySearchQuery(query=text, scope={"user": "u1"})
            assert _hits(await cold.search(query)) == hits


async def test_the_feedback_stems_are_counted_only_for_another_state(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write(_INPUTS)
        statistics: PostgresStatistics = store._statistics
        await store.search(MemorySearchQuery(query="garden", scope={"user": "u1"}))
        counted = set(statistics._frequency)
        assert {"garden", "tomato", "rose", "kayak"} <= counted  # the candidates' stems
        statistics._frequency = {}  # same version: the server is not asked again
        await store.search(MemorySearchQuery(query="garden", scope={"user": "u1"}))
        assert set(statistics._frequency) < counted
        await store.write([MemoryWriteInput(scope={"user": "u2"}, content="new garden")])
        await store.search(MemorySearchQuery(query="garden", scope={"user": "u1"}))
        assert set(statistics._frequency) >= counted  # another state: counted whole


async def test_a_few_candidates_stems_are_counted_every_time(
    postgres_url: str, postgres_schema: str
) -> None:
    few = [inp.model_copy(update={"scope": {"user": "few"}}) for inp in _INPUTS[:ALWAYS_COUNTED]]
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write(few)
        statistics: PostgresStatistics = store._statistics
        for _ in range(2):
            statistics._frequency = {}  # the same state both times
            await store.search(MemorySearchQuery(query="note", scope={"user": "few"}))
            assert {"garden", "tomato", "rose", "kayak", "piano"} <= set(statistics._frequency)


async def test_a_lookup_of_another_state_raises(postgres_url: str, postgres_schema: str) -> None:
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write(_INPUTS)
        await store.search(MemorySearchQuery(query="garden", scope={"user": "u1"}))
        statistics: PostgresStatistics = store._statistics
        version = statistics.version
        assert version is not None
        async with await psycopg.AsyncConnection.connect(postgres_url) as conn:
            with pytest.raises(StatisticsMoved) as moved:
                await statistics.lookup(conn, ["zebra"], at=version - 1)
            assert (moved.value.expected, moved.value.found) == (version - 1, version)
            known = await statistics.lookup(conn, ["zebra", "note"], at=version)
        assert known.document_frequency["zebra"] == 0
        assert known.document_frequency["note"] == len(_INPUTS)


class _WritesOnce(PostgresStatistics):
    """Statistics whose first look-up lets another writer commit just before it reads:
    a write landing between a search's statement and its look-up of missing counts."""

    def __init__(self, schema: str, url: str) -> None:
        super().__init__(schema)
        self.url = url
        self.moved = 0

    async def lookup(self, conn: Any, stems: Sequence[str], *, at: int | None = None) -> Any:
        if self.moved == 0 and at is not None:
            self.moved = 1
            async with PostgresMemoryStore(self.url, schema=self._schema) as other:
                await other.write([MemoryWriteInput(scope={"user": "u2"}, content="a garden")])
        try:
            return await super().lookup(conn, stems, at=at)
        except StatisticsMoved:
            self.moved += 1
            raise


async def test_a_write_mid_search_sends_it_round_again(
    postgres_url: str, postgres_schema: str
) -> None:
    query = MemorySearchQuery(query="garden tomatoes week", scope={"user": "u1"})
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write(_INPUTS)
        await store.search(query)  # the cache holds this state's counts
        warm = store._statistics
        watched = _WritesOnce(postgres_schema, postgres_url)
        # The same state's totals, and its counts of the query's stems only, so the
        # search must look the feedback words' counts up.
        watched._version, watched._totals = warm._version, warm._totals
        watched.learn({stem: warm._frequency[stem] for stem in ("garden", "tomato", "week")})
        store._statistics = watched
        hits = _hits(await store.search(query))
    assert watched.moved == 2  # a look-up saw the other state and the search ran again
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as cold:
        assert _hits(await cold.search(query)) == hits  # the ranking of the state after
