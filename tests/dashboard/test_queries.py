"""The lens's reading helpers: scope parameters, reasons and supersede chains."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from recallstore.dashboard._queries import (
    check_reason,
    format_scope,
    parse_scope,
    supersede_chain,
)
from recallstore.errors import MemoryValidationError
from recallstore.events import ObservedMemoryStore
from recallstore.records import MemoryRecord, MemoryWriteInput

SCOPE = {"tenant": "acme", "user": "u_42"}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], {}),
        (["", "  "], {}),
        (["tenant=acme"], {"tenant": "acme"}),
        (["tenant=acme", "user=u_42"], SCOPE),
        (["tenant=acme, user=u_42"], SCOPE),
        (["note=a,b"], {"note": "a,b"}),
        (["note=a,b, user=u_42"], {"note": "a,b", "user": "u_42"}),
        (["expr=x=y"], {"expr": "x=y"}),
        (["empty="], {"empty": ""}),
        # A comma splits only before another "key=": the rest belongs to the value.
        (["tenant=acme, user"], {"tenant": "acme, user"}),
    ],
)
def test_scope_parameters(values: list[str], expected: dict[str, str]) -> None:
    assert parse_scope(values) == expected


@pytest.mark.parametrize("value", ["tenant", "=acme", " = acme"])
def test_a_scope_pair_without_a_key_or_equals_sign_is_refused(value: str) -> None:
    with pytest.raises(MemoryValidationError) as caught:
        parse_scope([value])
    assert caught.value.field == "scope"


def test_format_scope_round_trips() -> None:
    assert parse_scope([format_scope(SCOPE)]) == SCOPE


def test_reasons_are_stripped_bounded_and_blank_means_none() -> None:
    assert check_reason("  moved away ") == "moved away"
    assert check_reason("   ") is None
    assert check_reason(None) is None
    for bad in ("x" * 1001, "a\x00b", 7):
        with pytest.raises(MemoryValidationError) as caught:
            check_reason(bad)
        assert caught.value.field == "reason"


def test_status_words() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    base = MemoryRecord(id="r1", scope=SCOPE, content="x", created_at=now, updated_at=now)
    assert base.status(now) == "valid"
    expired = base.model_copy(update={"expires_at": now - timedelta(seconds=1)})
    assert expired.status(now) == "expired"
    invalid = expired.model_copy(update={"invalid_at": now})
    assert invalid.status(now) == "invalidated"
    superseded = invalid.model_copy(update={"superseded_by": "r2"})
    assert superseded.status(now) == "superseded"


async def test_the_chain_is_walked_both_ways_and_survives_a_deleted_link(
    store: ObservedMemoryStore,
) -> None:
    async def write(content: str, supersedes: str | None = None) -> MemoryRecord:
        [record] = await store.write(
            [MemoryWriteInput(scope=SCOPE, content=content, supersedes=supersedes)]
        )
        return record

    one = await write("one")
    two = await write("two", one.id)
    three = await write("three", two.id)
    four = await write("four", three.id)
    await write("unrelated")

    middle = await store.get(two.id)
    assert middle is not None
    chain = await supersede_chain(store, middle)
    assert [link.id for link in chain.older] == [one.id]
    assert [link.id for link in chain.newer] == [three.id, four.id]
    assert [link.id for link in chain.links] == [one.id, two.id, three.id, four.id]
    assert not chain.is_single

    await store.delete(three.id)
    middle = await store.get(two.id)
    assert middle is not None
    broken = await supersede_chain(store, middle)
    assert [(link.id, link.record is None) for link in broken.newer] == [(three.id, True)]

    single = await supersede_chain(store, await write("alone"))
    assert single.is_single
    assert [link.id for link in single.links] == [single.current.id]


async def test_a_complete_walk_finds_predecessors_beyond_the_newest_listing(
    store: ObservedMemoryStore,
) -> None:
    [old] = await store.write([MemoryWriteInput(scope=SCOPE, content="old")])
    [new] = await store.write([MemoryWriteInput(scope=SCOPE, content="new", supersedes=old.id)])
    await store.write([MemoryWriteInput(scope=SCOPE, content=f"later {i}") for i in range(1000)])

    # The page view looks at the newest 1000 records of the scope only (documented)...
    assert (await supersede_chain(store, new)).is_single
    # ...the command line's walk reads them all.
    complete = await supersede_chain(store, new, complete=True)
    assert [link.id for link in complete.links] == [old.id, new.id]
