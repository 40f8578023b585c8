"""The SQLite store's time filters (S19, S20) agree with the reference's on random
stores: listings and keyword searches with random windows, instants and flags return
the same records, in the same order, as ``InMemoryMemoryStore``."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.store import MemoryStore, deterministic_ids

_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class SharedClock:
    """A clock both stores share, moved on by the test, so their stamps are equal."""

    def __init__(self) -> None:
        self.now = _START

    def __call__(self) -> datetime:
        return self.now


async def apply_history(store: MemoryStore, clock: SharedClock, seed: int) -> list[datetime]:
    """The same random history on ``store``; returns moments worth asking about."""
    rng = random.Random(seed)
    clock.now = _START
    moments = [_START]
    ids: list[str] = []
    for _ in range(40):
        clock.now += timedelta(hours=rng.randint(1, 30))
        action = rng.random()
        if action < 0.15 and ids:
            await store.invalidate(rng.choice(ids), "changed")
        elif action < 0.3 and ids:
            target = rng.choice(ids)
            current = await store.get(target)
            if current is not None and current.invalid_at is None:
                (new,) = await store.write(
                    [
                        MemoryWriteInput(
                            scope={"u": "1"}, content=f"kettle fix {len(ids)}", supersedes=target
                        )
                    ]
                )
                ids.append(new.id)
        else:
            observed = (
                clock.now - timedelta(days=rng.randint(0, 40)) if rng.random() < 0.6 else None
            )
            expires = (
                clock.now + timedelta(hours=rng.randint(1, 200)) if rng.random() < 0.3 else None
            )
            (record,) = await store.write(
                [
                    MemoryWriteInput(
                        scope={"u": rng.choice("12")},
                        content=f"kettle note {len(ids)} {rng.choice(['tea', 'coffee'])}",
                        observed_at=observed,
                        expires_at=expires,
                    )
                ]
            )
            ids.append(record.id)
            moments.append(record.observed_at)
        moments.append(clock.now)
    clock.now += timedelta(days=3)
    return moments


def random_queries(moments: list[datetime], seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed + 1000)
    asked = []
    for _ in range(60):
        query: dict[str, Any] = {"limit": rng.choice([3, 50])}
        if rng.random() < 0.5:
            query["query"] = rng.choice(["kettle", "tea", "coffee fix"])
        if rng.random() < 0.6:
            query["scope"] = {"u": rng.choice("12")}
        if rng.random() < 0.6:
            # Bounds on stored moments exactly, half the time: where < and <= differ.
            first, last = sorted(rng.sample(moments, 2))
            if rng.random() < 0.5:
                first -= timedelta(days=rng.randint(0, 30))
                last = first + timedelta(days=rng.randint(1, 20))
            if rng.random() < 0.7:
                query["observed_after"] = first
            if rng.random() < 0.7 and last > first:
                query["observed_before"] = last
        if rng.random() < 0.5:
            query["as_of"] = rng.choice(moments) + timedelta(microseconds=rng.choice([0, 1, -1]))
        query["include_invalidated"] = rng.random() < 0.3
        query["include_expired"] = rng.random() < 0.3
        asked.append(query)
    return asked


@pytest.mark.parametrize("seed", range(6))
async def test_sqlite_answers_time_filtered_searches_as_the_reference_does(
    seed: int, tmp_path: Path
) -> None:
    clock = SharedClock()
    reference = InMemoryMemoryStore(clock=clock, ids=deterministic_ids(seed))
    sqlite = SqliteMemoryStore(tmp_path / "m.db", clock=clock, ids=deterministic_ids(seed))
    async with reference, sqlite:
        moments = await apply_history(reference, clock, seed)
        assert moments == await apply_history(sqlite, clock, seed)
        for fields in random_queries(moments, seed):
            query = MemorySearchQuery(**fields)
            expected = [hit.record.id for hit in await reference.search(query)]
            found = [hit.record.id for hit in await sqlite.search(query)]
            assert found == expected, fields
