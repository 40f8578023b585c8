"""The Postgres store's time filters (S19, S20) agree with the reference's on the random
histories of ``tests/store/test_time_filters_agree.py``."""

from __future__ import annotations

import pytest
from tests.store.test_time_filters_agree import SharedClock, apply_history, random_queries

from recallstore import MemorySearchQuery
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.store import deterministic_ids


@pytest.mark.parametrize("seed", range(3))
async def test_postgres_answers_time_filtered_searches_as_the_reference_does(
    seed: int, postgres_url: str, postgres_schema: str
) -> None:
    clock = SharedClock()
    reference = InMemoryMemoryStore(clock=clock, ids=deterministic_ids(seed))
    postgres = PostgresMemoryStore(
        postgres_url, schema=postgres_schema, clock=clock, ids=deterministic_ids(seed)
    )
    async with reference, postgres:
        moments = await apply_history(reference, clock, seed)
        assert moments == await apply_history(postgres, clock, seed)
        for fields in random_queries(moments, seed):
            query = MemorySearchQuery(**fields)
            expected = [hit.record.id for hit in await reference.search(query)]
            found = [hit.record.id for hit in await postgres.search(query)]
            assert found == expected, fields
