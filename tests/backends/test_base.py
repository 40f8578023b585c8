"""What BaseMemoryStore adds to every backend: injectable ids, declared capabilities, size."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from recallstore import (
    BaseMemoryStore,
    ConfigurationError,
    InMemoryMemoryStore,
    MemorySearchQuery,
    MemoryStore,
    MemoryWriteInput,
    SqliteMemoryStore,
    deterministic_ids,
)
from recallstore.store import EXPORT_EXTENSION, is_storable_id

BACKENDS = Path(__file__).resolve().parents[2] / "src" / "recallstore" / "backends"
URL_SAFE = re.compile(r"^[0-9a-z]{26}$")


def test_deterministic_ids_repeat_for_a_seed_and_increase() -> None:
    first = deterministic_ids()
    ids = [first() for _ in range(200)]
    again = deterministic_ids(0)
    assert [again() for _ in range(200)] == ids
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(URL_SAFE.match(record_id) and is_storable_id(record_id) for record_id in ids)
    other = deterministic_ids(seed=1)
    assert other() != ids[0]


@pytest.mark.parametrize("seed", ["0", 1.5, None, True])
def test_deterministic_ids_take_an_int_seed(seed: object) -> None:
    with pytest.raises(TypeError, match=re.escape(repr(seed))):
        deterministic_ids(seed)  # type: ignore[arg-type]


def _fixed_clock() -> Callable[[], datetime]:
    return lambda: datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., MemoryStore]:
    if request.param == "memory":
        return lambda **options: InMemoryMemoryStore(**options)
    return lambda **options: SqliteMemoryStore(tmp_path / "memory.db", **options)


async def test_injected_ids_and_clock_make_records_reproducible(
    make_store: Callable[..., MemoryStore],
) -> None:
    async with make_store(clock=_fixed_clock(), ids=deterministic_ids(7)) as store:
        first = await store.write([MemoryWriteInput(scope={"u": "1"}, content="likes tea")])
        [second] = await store.write(
            [MemoryWriteInput(scope={"u": "1"}, content="likes coffee", supersedes=first[0].id)]
        )
        listed = await store.search(MemorySearchQuery(include_invalidated=True))
    expected = deterministic_ids(7)
    assert [first[0].id, second.id] == [expected(), expected()]
    # The clock stands still, so the store steps each stamp by a microsecond.
    assert second.created_at == first[0].created_at + timedelta(microseconds=1)
    assert [hit.record.id for hit in listed] == [second.id, first[0].id]


@pytest.mark.parametrize("bad_id", ["", "nul\x00id", "a/b", "x" * 129, 42])
async def test_an_ids_source_returning_an_unusable_id_writes_nothing(
    make_store: Callable[..., MemoryStore], bad_id: object
) -> None:
    async with make_store(ids=lambda: bad_id) as store:
        with pytest.raises(ConfigurationError, match="unusable id"):
            await store.write([MemoryWriteInput(scope={"u": "1"}, content="likes tea")])
        assert await store.search(MemorySearchQuery()) == []


@pytest.mark.parametrize("option", ["clock", "ids"])
def test_clock_and_ids_must_be_callables(option: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{option} must be a callable"):
        InMemoryMemoryStore(**{option: "not callable"})  # type: ignore[arg-type]


def test_capabilities_come_from_the_declared_class_attributes() -> None:
    class Semantic(InMemoryMemoryStore):
        search_mode = "semantic"
        durable = True
        extensions = frozenset({"custom"})

    capabilities = Semantic().capabilities()
    assert (capabilities.search, capabilities.durable, capabilities.extensions) == (
        "semantic",
        True,
        frozenset({"custom"}),
    )


def test_declaring_export_without_an_export_primitive_fails_at_class_definition() -> None:
    with pytest.raises(TypeError, match="'export' extension but no _export"):

        class NoExport(BaseMemoryStore[None]):  # pragma: no cover - never instantiated
            extensions = frozenset({EXPORT_EXTENSION})


def test_backend_modules_stay_small() -> None:
    sizes = {path.name: len(path.read_text().splitlines()) for path in BACKENDS.glob("*.py")}
    assert {name: size for name, size in sizes.items() if size > 450} == {}
