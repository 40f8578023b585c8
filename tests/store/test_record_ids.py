"""Injectable record ids: ``ids=`` on every backend and ``deterministic_ids`` for tests."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from recallstore import InMemoryMemoryStore, MemoryStore, MemoryWriteInput, SqliteMemoryStore
from recallstore.store import deterministic_ids, is_storable_id, new_record_id

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
