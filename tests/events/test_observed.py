"""ObservedMemoryStore over a real SQLite store: one event per call, no content by default."""

from __future__ import annotations

import pytest

from recallstore import (
    ConfigurationError,
    InMemoryMemoryStore,
    MemoryConflictError,
    MemoryNotFoundError,
    MemorySearchQuery,
    MemoryStore,
    MemoryWriteInput,
    call_context,
)
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.events import (
    EventBus,
    MemoryEvent,
    MemoryRecallData,
    MemorySearchData,
    MemoryWriteData,
    ObservedMemoryStore,
)
from recallstore.jsonl import iter_records
from recallstore.prompt import render_recall
from recallstore.recall import RecallObserver, assemble_recall
from recallstore.records import MemoryStoreCapabilities
from recallstore.store import SupportsImportRecords

# Upper case and a hyphen: never part of a timestamp or an id, so finding it in an
# event means the content leaked (plain digits turned up in timestamps).
SECRET_CODE = "QX-4417"
SECRET = f"the door code is {SECRET_CODE}"
USER = {"tenant": "acme", "user": "u1"}


def collect(bus: EventBus) -> list[MemoryEvent]:
    seen: list[MemoryEvent] = []
    bus.add_listener(seen.append)
    return seen


def test_observed_store_is_a_memory_store_and_a_recall_observer(
    sqlite_store: SqliteMemoryStore,
) -> None:
    observed = ObservedMemoryStore(sqlite_store, EventBus())
    assert isinstance(observed, MemoryStore)
    assert isinstance(observed, RecallObserver)
    inner = sqlite_store.capabilities()
    assert {"import", "export"} <= inner.extensions
    # Truthful: export, idempotent writes, forget and promote (traced) pass through,
    # import (an unobservable bulk mutation) does not.
    expected = {"export", "idempotency", "forget", "promote"}
    assert observed.capabilities() == inner.model_copy(update={"extensions": expected})
    assert not isinstance(observed, SupportsImportRecords)


class _PlainStore(InMemoryMemoryStore):
    """A store without the optional extensions (only the six protocol methods)."""

    def capabilities(self) -> MemoryStoreCapabilities:
        return MemoryStoreCapabilities(search="keyword")


async def test_export_passes_through_and_emits_nothing(
    sqlite_store: SqliteMemoryStore,
) -> None:
    bus = EventBus()
    observed = ObservedMemoryStore(sqlite_store, bus)
    (record,) = await observed.write([MemoryWriteInput(scope=USER, content="a")])
    await observed.invalidate(record.id)
    published = bus.last_id
    exported = [r async for r in observed.export_records(USER)]
    assert exported == [r async for r in sqlite_store.export_records(USER)]
    assert [r.id for r in exported] == [record.id]
    assert [r async for r in iter_records(observed, USER)] == exported
    assert bus.last_id == published

    async with _PlainStore() as plain:
        wrapped = ObservedMemoryStore(plain, bus)
        assert wrapped.capabilities().extensions == frozenset()
        with pytest.raises(ConfigurationError, match="'export' extension"):
            wrapped.export_records()


async def test_every_call_emits_one_event_with_ids_kinds_and_counts(
    sqlite_store: SqliteMemoryStore,
) -> None:
    bus = EventBus()
    seen = collect(bus)
    store = ObservedMemoryStore(sqlite_store, bus)
    with call_context(conversation_id="conv-1", run_id="run-1"):
        (first,) = await store.write([MemoryWriteInput(scope=USER, content=SECRET)])
        (second,) = await store.write(
            [MemoryWriteInput(scope=USER, content="the door code is 9001", supersedes=first.id)]
        )
        hits = await store.search(MemorySearchQuery(query="door code", scope=USER))
        assert await store.get(second.id) == second
        await store.invalidate(second.id, reason="moved out")
        await store.invalidate(second.id, reason="again")
        await store.delete(first.id)
        await store.delete("never-existed")

    assert [e.id for e in seen] == [1, 2, 3, 4, 5, 6, 7]
    assert all(e.conversation_id == "conv-1" and e.run_id == "run-1" for e in seen)
    write, supersede, search, invalidate, repeat, delete, absent = (e.data for e in seen)
    assert isinstance(write, MemoryWriteData)
    assert (write.operation, write.record_ids, write.kinds, write.count) == (
        "write",
        (first.id,),
        ("fact",),
        1,
    )
    assert isinstance(supersede, MemoryWriteData)
    assert supersede.operation == "supersede"
    assert supersede.superseded_ids == (first.id,)
    assert supersede.record_ids == (second.id,)
    assert isinstance(search, MemorySearchData)
    assert search.mode == "keyword"
    assert search.query_chars == len("door code")
    assert search.result_ids == tuple(hit.record.id for hit in hits) == (second.id,)
    assert search.duration_ms >= 0
    assert isinstance(invalidate, MemoryWriteData)
    assert (invalidate.operation, invalidate.count, invalidate.reason_chars) == (
        "invalidate",
        1,
        len("moved out"),
    )
    assert isinstance(repeat, MemoryWriteData)
    assert repeat.count == 0  # already invalid: nothing changed (S4)
    assert isinstance(delete, MemoryWriteData)
    assert (delete.operation, delete.record_ids, delete.count) == ("delete", (first.id,), 1)
    assert isinstance(absent, MemoryWriteData)
    assert (absent.count, absent.kinds) == (0, ())
    assert seen[0].scope == USER
    assert seen[2].scope == USER
    assert absent.ok
    assert seen[6].scope == {}


async def test_events_carry_no_content_reason_or_query_text_by_default(
    sqlite_store: SqliteMemoryStore,
) -> None:
    bus = EventBus()
    seen = collect(bus)
    store = ObservedMemoryStore(sqlite_store, bus)
    (record,) = await store.write([MemoryWriteInput(scope=USER, content=SECRET)])
    await store.search(MemorySearchQuery(query=f"door code {SECRET_CODE}", scope=USER))
    await store.invalidate(record.id, reason=f"reason text {SECRET_CODE}")
    await assemble_recall(store, USER, f"what is the door code {SECRET_CODE}?")
    text = "".join(event.model_dump_json() for event in seen)
    assert len(seen) == 6
    assert SECRET_CODE not in text
    assert "door" not in text


async def test_opt_ins_add_content_reason_and_query_text(
    sqlite_store: SqliteMemoryStore,
) -> None:
    bus = EventBus()
    seen = collect(bus)
    store = ObservedMemoryStore(sqlite_store, bus, include_content=True, include_query_text=True)
    (record,) = await store.write([MemoryWriteInput(scope=USER, content=SECRET)])
    await store.search(MemorySearchQuery(query="door code", scope=USER))
    await store.invalidate(record.id, reason="moved out")
    write, search, invalidate = (event.data for event in seen)
    assert isinstance(write, MemoryWriteData)
    assert write.contents == (SECRET,)
    assert isinstance(search, MemorySearchData)
    assert search.query == "door code"
    assert isinstance(invalidate, MemoryWriteData)
    assert invalidate.reason == "moved out"


async def test_failed_calls_emit_a_failure_event_never_a_success(
    sqlite_store: SqliteMemoryStore,
) -> None:
    bus = EventBus()
    seen = collect(bus)
    store = ObservedMemoryStore(sqlite_store, bus)
    (record,) = await store.write([MemoryWriteInput(scope=USER, content="a")])
    await store.write([MemoryWriteInput(scope=USER, content="b", supersedes=record.id)])
    with pytest.raises(MemoryConflictError):
        await store.write([MemoryWriteInput(scope=USER, content="c", supersedes=record.id)])
    with pytest.raises(MemoryNotFoundError):
        await store.invalidate("missing-id")
    conflict, missing = seen[2].data, seen[3].data
    assert isinstance(conflict, MemoryWriteData)
    assert (conflict.ok, conflict.error, conflict.record_ids, conflict.count) == (
        False,
        "MemoryConflictError",
        (),
        0,
    )
    assert (conflict.operation, conflict.superseded_ids) == ("supersede", (record.id,))
    assert isinstance(missing, MemoryWriteData)
    assert (missing.ok, missing.error, missing.operation) == (
        False,
        "MemoryNotFoundError",
        "invalidate",
    )


async def test_mixed_scope_batch_reports_the_common_scope(
    sqlite_store: SqliteMemoryStore,
) -> None:
    bus = EventBus()
    seen = collect(bus)
    store = ObservedMemoryStore(sqlite_store, bus)
    await store.write(
        [
            MemoryWriteInput(scope={"tenant": "acme", "user": "u1"}, content="one"),
            MemoryWriteInput(scope={"tenant": "acme", "user": "u2"}, content="two"),
        ]
    )
    assert seen[0].scope == {"tenant": "acme"}
    assert isinstance(seen[0].data, MemoryWriteData)
    assert seen[0].data.count == 2


async def test_assemble_recall_emits_searches_then_one_recall_event(
    sqlite_store: SqliteMemoryStore,
) -> None:
    bus = EventBus()
    store = ObservedMemoryStore(sqlite_store, bus)
    await store.write(
        [
            MemoryWriteInput(scope=USER, kind="profile", content="Name: Ada"),
            MemoryWriteInput(scope=USER, content="Ada prefers green tea"),
            MemoryWriteInput(scope=USER, content="Ada drinks tea " + "x" * 400),
        ]
    )
    seen = collect(bus)
    recall = await assemble_recall(
        store, USER, "what tea?", budget_chars=700, conversation_id="conv-9"
    )
    assert [e.type for e in seen] == [
        "agent.memory.search",
        "agent.memory.search",
        "agent.memory.recall",
    ]
    data = seen[-1].data
    assert isinstance(data, MemoryRecallData)
    assert data.record_ids == tuple(record.id for record in recall.entries)
    assert (data.profile_count, data.hit_count) == (1, 1)
    assert (data.truncated, data.omitted, data.budget_chars) == (True, 1, 700)
    block = render_recall(recall)
    assert block is not None
    assert data.chars == recall.used_chars == len(block)
    assert data.bytes == len(block.encode())
    assert all(e.conversation_id == "conv-9" for e in seen)
    assert seen[-1].scope == USER


@pytest.mark.slow
async def test_a_raising_listener_never_breaks_a_thousand_writes(tmp_path: object) -> None:
    bus = EventBus(replay_size=100)
    calls = 0

    def broken(event: MemoryEvent) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("subscriber bug")

    bus.add_listener(broken)
    seen = collect(bus)
    async with SqliteMemoryStore(tmp_path / "memory.db") as sqlite:  # type: ignore[operator]
        store = ObservedMemoryStore(sqlite, bus)
        written = [
            (await store.write([MemoryWriteInput(scope=USER, content=f"fact {n}")]))[0]
            for n in range(1000)
        ]
        assert len({record.id for record in written}) == 1000
        listing = await sqlite.search(MemorySearchQuery(scope=USER, limit=1000))
    assert len(listing) == 1000
    assert calls == 1000
    assert bus.stats().listener_failures == 1000
    assert [e.id for e in seen] == list(range(1, 1001))
    assert store.observer_failures == 0
