"""``PostgresMemoryStore(ids=...)`` takes its record ids from the given source."""

from __future__ import annotations

from recallstore import MemoryWriteInput, PostgresMemoryStore
from recallstore.store import deterministic_ids


async def test_postgres_takes_its_record_ids_from_ids(
    postgres_url: str, postgres_schema: str
) -> None:
    async with PostgresMemoryStore(
        postgres_url, schema=postgres_schema, ids=deterministic_ids(5)
    ) as store:
        records = await store.write(
            [MemoryWriteInput(scope={"user": "ana"}, content=f"note {n}") for n in range(2)]
        )
    expected = deterministic_ids(5)
    assert [r.id for r in records] == [expected(), expected()]
