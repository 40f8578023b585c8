"""Windows cut at the calendar's edges reach PostgreSQL as they are (issue 36 item 2):
a search bounded by the start of the year 1000 and the last instant of 9999, through
the tools and the first message, answers like the reference store."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.fuzz.test_calendar_edges import EDGE_PHRASES, ZONES

from recallstore import MemoryCapability, MemorySearchQuery, MemoryToolbox, MemoryWriteInput
from recallstore._when import EARLIEST, LATEST
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.records import MemoryHit
from recallstore.store import MemoryStore, deterministic_ids

SCOPE = {"user": "u1"}


async def _stock(store: MemoryStore) -> None:
    await store.write(
        [
            MemoryWriteInput(scope=SCOPE, content="the kettle party is on 9999-12-31"),
            MemoryWriteInput(
                scope=SCOPE,
                content="the kettle descaler",
                observed_at=datetime(1000, 1, 1, tzinfo=UTC),
            ),
        ]
    )


def _ids(hits: list[MemoryHit]) -> list[str]:
    return [hit.record.id for hit in hits]


async def test_edge_windows_on_postgres_answer_as_the_reference(
    postgres_url: str, postgres_schema: str
) -> None:
    clock = lambda: datetime(2026, 3, 14, tzinfo=UTC)  # noqa: E731
    reference = InMemoryMemoryStore(clock=clock, ids=deterministic_ids(1))
    postgres = PostgresMemoryStore(
        postgres_url, schema=postgres_schema, clock=clock, ids=deterministic_ids(1)
    )
    async with reference, postgres:
        await _stock(reference)
        await _stock(postgres)
        for after, before in ((EARLIEST, LATEST), (EARLIEST, None), (None, LATEST)):
            query = MemorySearchQuery(
                query="kettle", scope=SCOPE, observed_after=after, observed_before=before
            )
            assert _ids(await postgres.search(query)) == _ids(await reference.search(query))
            assert len(await postgres.search(query)) == 2
        for zone in ZONES:
            ours = MemoryToolbox(postgres, SCOPE, time_zone=zone)
            theirs = MemoryToolbox(reference, SCOPE, time_zone=zone)
            for phrase in EDGE_PHRASES:
                for arguments in (
                    {"query": "kettle", "since": phrase},
                    {"query": "kettle", "until": phrase},
                    {"query": f"kettle {phrase}"},
                ):
                    got = await ours.call("memory_search", arguments)
                    assert got == await theirs.call("memory_search", arguments), arguments
                    assert got["ok"] or got["error"]["code"] == "invalid_arguments", got
        capability = MemoryCapability(postgres, scope_fields=["user"])
        instance = await capability.instantiate(
            SCOPE, conversation_id="c1", first_user_text="the kettle on 9999-12-31"
        )
        assert len(instance.recall.hits) == 2
