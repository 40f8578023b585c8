"""Injectable record ids: ``ids=`` on every backend and ``deterministic_ids`` for tests."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from recallstore import InMemoryMemoryStore, MemoryStore, MemoryWriteInput, SqliteMemoryStore
from recallstore.errors import ConfigurationError
from recallstore.store import (
    MonotonicClock,
    deterministic_ids,
    ids_from,
    is_storable_id,
    new_record_id,
    new_record_ids,
)

URL_SAFE = re.compile(r"^[0-9a-hjkmnp-tv-z]{26}$")  # new_record_id's alphabet and length
SCOPE = {"user": "ana"}


def take(ids: Callable[[], str], count: int) -> list[str]:
    return [ids() for _ in range(count)]


def test_the_same_seed_gives_the_same_ids_in_another_process() -> None:
    here = take(deterministic_ids(7), 5)
    code = (
        "from recallstore.store import deterministic_ids\n"
        "ids = deterministic_ids(7)\n"
        "print([ids() for _ in range(5)])"
    )
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()
    assert there == repr(here)


def test_other_seeds_give_other_ids() -> None:
    sequences = [take(deterministic_ids(seed), 3) for seed in (0, 1, 2**70)]
    assert len({id for sequence in sequences for id in sequence}) == 9


def test_ids_are_time_ordered_url_safe_and_storable() -> None:
    ids = take(deterministic_ids(), 2_000)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    for record_id in ids:
        assert URL_SAFE.match(record_id), record_id
        assert is_storable_id(record_id)
        assert len(record_id) == len(new_record_id())


@pytest.mark.parametrize("seed", ["0", 1.0, None, True])
def test_a_seed_that_is_not_an_int_is_refused(seed: object) -> None:
    with pytest.raises(TypeError, match=re.escape(repr(seed))):
        deterministic_ids(seed)  # type: ignore[arg-type]


@pytest.fixture(params=["memory", "sqlite"])
def make_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[Callable[[], str]], MemoryStore]:
    def make(ids: Callable[[], str]) -> MemoryStore:
        if request.param == "memory":
            return InMemoryMemoryStore(ids=ids)
        return SqliteMemoryStore(tmp_path / f"{len(list(tmp_path.iterdir()))}.db", ids=ids)

    return make


async def test_a_store_takes_its_record_ids_from_ids(
    make_store: Callable[[Callable[[], str]], MemoryStore],
) -> None:
    async with make_store(deterministic_ids(3)) as store:
        first = await store.write([MemoryWriteInput(scope=SCOPE, content="Ana likes jazz.")])
        second = await store.write(
            [
                MemoryWriteInput(scope=SCOPE, content="Ana lives in Lisbon."),
                MemoryWriteInput(
                    scope=SCOPE, content="Ana likes bossa nova.", supersedes=first[0].id
                ),
            ]
        )
        assert [r.id for r in first + second] == take(deterministic_ids(3), 3)
        superseded = await store.get(first[0].id)
        assert superseded is not None
        assert superseded.superseded_by == second[1].id


async def test_without_ids_a_store_generates_unique_ids(
    make_store: Callable[[Callable[[], str]], MemoryStore],
) -> None:
    async with make_store(new_record_id) as store:
        inputs = [MemoryWriteInput(scope=SCOPE, content=f"note {n}") for n in range(3)]
        records = await store.write(inputs)
    assert len({r.id for r in records}) == 3
    assert not set(take(deterministic_ids(), 100)) & {r.id for r in records}


def test_batches_of_new_ids_keep_increasing_with_single_ids_between() -> None:
    ids = [*new_record_ids(500), new_record_id(), *new_record_ids(1)]
    assert new_record_ids(0) == []
    ids += [*new_record_ids(300), new_record_id()]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids) == 803
    assert all(URL_SAFE.match(record_id) for record_id in ids)


def test_a_batch_is_stamped_from_one_reading_one_microsecond_apart() -> None:
    readings = iter([datetime(2026, 1, 1, 12, tzinfo=UTC), datetime(2026, 1, 1, 11, tzinfo=UTC)])
    clock = MonotonicClock(lambda: next(readings))
    first = clock.readings(3)
    assert first == [datetime(2026, 1, 1, 12, 0, 0, offset, tzinfo=UTC) for offset in range(3)]
    # The clock stepped back: the next batch still starts after the last stamp.
    assert clock.readings(2) == [first[-1] + timedelta(microseconds=n) for n in (1, 2)]
    assert clock.readings(0) == []


def test_an_ids_source_giving_an_unusable_id_is_named() -> None:
    with pytest.raises(ConfigurationError, match=re.escape("'a/b'")):
        ids_from(iter(["ok", "a/b"]).__next__, 2)


CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def decoded(record_id: str) -> int:
    value = 0
    for char in record_id:
        value = value * 32 + CROCKFORD.index(char)
    return value


@pytest.mark.parametrize(
    "last_random",
    [
        0,  # the low 20 bits start at 1: no carry
        (1 << 20) - 4,  # the batch crosses a 20-bit boundary
        (1 << 40) - 2,  # ... and a 40-bit one
        (1 << 79) + 12_345,  # a large random part
    ],
)
def test_a_batch_of_ids_is_one_time_and_successive_random_parts(
    monkeypatch: pytest.MonkeyPatch, last_random: int
) -> None:
    # A clock far ahead of the last id: the batch continues from the last random part.
    time_ms = 2**47
    monkeypatch.setattr("recallstore.store.ids._last_id_ms", time_ms)
    monkeypatch.setattr("recallstore.store.ids._last_id_random", last_random)
    ids = new_record_ids(10)
    values = [decoded(record_id) for record_id in ids]
    assert values == [(time_ms << 80) | (last_random + 1 + n) for n in range(10)]
    assert all(URL_SAFE.match(record_id) for record_id in ids)
