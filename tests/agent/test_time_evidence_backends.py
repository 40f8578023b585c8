"""``memory_search`` ranks "What did we talk about on Thursday?" alike on the in-memory,
SQLite and Postgres stores (issue 37 item 3): the time boost is composed of store
searches, so every backend gives SQLite's order."""

from __future__ import annotations

from typing import Any

import pytest
from tests.agent.test_time_evidence import (
    FRIDAY,
    QUESTION,
    THURSDAY_FIG,
    THURSDAY_TRIP,
    TUESDAY_TALK,
    USER,
    _contents,
    week,
)
from tests.postgres_server import postgres_schema, postgres_url

from recallstore import MemoryToolbox, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery
from recallstore.testing.pytest_plugin import FrozenClock

__all__ = ["postgres_schema", "postgres_url", "week"]


@pytest.mark.parametrize("backend", ["memory", "postgres"])
async def test_on_thursday_ranks_alike_on_every_backend(
    backend: str, request: pytest.FixtureRequest, week: SqliteMemoryStore
) -> None:
    """The boost is composed of store searches, so every backend gives SQLite's order."""
    from recallstore.backends.memory import InMemoryMemoryStore

    if backend == "postgres":
        from recallstore.backends.postgres import PostgresMemoryStore

        url = request.getfixturevalue("postgres_url")
        schema = request.getfixturevalue("postgres_schema")
        other: Any = PostgresMemoryStore(url, schema=schema, clock=FrozenClock(FRIDAY))
    else:
        other = InMemoryMemoryStore(clock=FrozenClock(FRIDAY))
    async with other:
        listed = await week.search(MemorySearchQuery(scope=USER, limit=10))
        await other.write(
            [
                MemoryWriteInput(
                    scope=USER, content=hit.record.content, observed_at=hit.record.observed_at
                )
                for hit in reversed(listed)
            ]
        )
        expected = _contents(
            await MemoryToolbox(week, USER).call("memory_search", {"query": QUESTION})
        )
        got = _contents(await MemoryToolbox(other, USER).call("memory_search", {"query": QUESTION}))
        assert got == expected == [THURSDAY_TRIP, THURSDAY_FIG, TUESDAY_TALK]
