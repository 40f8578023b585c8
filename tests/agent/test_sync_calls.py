"""recallstore.sync's capture, consolidation and library calls on a real SQLite file:
the same results as the async functions, idempotent re-capture, exact revert, and the
errors of a closed store, an async store and bad input (nothing changed)."""

from __future__ import annotations

import asyncio
import inspect
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.backends.plugin.recallstore_jsonl import JsonlMemoryStore

import recallstore
import recallstore.consolidation
import recallstore.events.journal
import recallstore.jsonl
import recallstore.sync
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.consolidation import DEFAULT_PROPOSERS, SlotMatch
from recallstore.errors import (
    ConfigurationError,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
    StoreUnavailableError,
)
from recallstore.records import MemoryRecord, MemorySearchQuery, MemoryWriteInput
from recallstore.sync import SyncMemoryStore

ANA = {"tenant": "acme", "user": "ana"}
BO = {"tenant": "acme", "user": "bo"}
TRANSCRIPT = [
    ("user", "I adopted a cat named Miso."),
    ("assistant", "What a lovely name!"),
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SyncMemoryStore]:
    with SyncMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


def _everything(store: SyncMemoryStore) -> list[MemoryRecord]:
    return recallstore.sync.scope_records(store, ANA) + recallstore.sync.scope_records(store, BO)


# The async twin of each sync function: same name, same parameters after the store.
TWINS: dict[str, Callable[..., Any]] = {
    "capture": recallstore.capture,
    "memory_prompt": recallstore.memory_prompt,
    "assemble_recall": recallstore.assemble_recall,
    "supersede_chain": recallstore.supersede_chain,
    "export_jsonl": recallstore.jsonl.export_jsonl,
    "import_records": recallstore.jsonl.import_records,
    "consolidate": recallstore.consolidation.consolidate,
    "apply_plan": recallstore.consolidation.apply_plan,
    "revert_plan": recallstore.consolidation.revert_plan,
    "kept_plans": recallstore.consolidation.kept_plans,
    "read_kept_plans": recallstore.consolidation.read_kept_plans,
    "scope_records": recallstore.consolidation.scope_records,
    "iter_records": recallstore.jsonl.iter_records,
    "tail_events": recallstore.events.journal.tail_events,
    "assemble_learned": recallstore.assemble_learned,
    "distil": recallstore.consolidation.distil,
    "apply_distillation": recallstore.consolidation.apply_distillation,
    "kept_distillations": recallstore.consolidation.kept_distillations,
    "revert_distillation": recallstore.consolidation.revert_distillation,
}


@pytest.mark.parametrize("name", sorted(TWINS))
def test_each_sync_call_takes_the_async_ones_parameters(name: str) -> None:
    sync_params = list(inspect.signature(getattr(recallstore.sync, name)).parameters.values())
    async_params = list(inspect.signature(TWINS[name]).parameters.values())
    assert sync_params[0].name == async_params[0].name == "store"
    assert [(p.name, p.kind, p.default) for p in sync_params[1:]] == [
        (p.name, p.kind, p.default) for p in async_params[1:]
    ]
    assert name in recallstore.sync.__all__


def test_every_async_function_over_a_store_has_a_sync_twin() -> None:
    modules = [
        recallstore,
        recallstore.consolidation,
        recallstore.jsonl,
        recallstore.events.journal,
    ]
    async_over_store = {
        name
        for module in modules
        for name in module.__all__
        if (
            inspect.iscoroutinefunction(getattr(module, name))
            or inspect.isasyncgenfunction(getattr(module, name))
        )
        and next(iter(inspect.signature(getattr(module, name)).parameters)) == "store"
    }
    assert async_over_store == set(TWINS)


def test_capture_stores_the_conversation_once(store: SyncMemoryStore) -> None:
    first = recallstore.sync.capture(store, ANA, TRANSCRIPT, conversation_id="c1")
    assert (first.added, first.messages, first.kept) == (2, 2, 2)
    assert [r.content for r in first.records] == [
        "user: I adopted a cat named Miso.",
        "assistant: What a lovely name!",
    ]
    again = recallstore.sync.capture(store, ANA, TRANSCRIPT, conversation_id="c1")
    assert again.added == 0
    assert [r.id for r in again.records] == [r.id for r in first.records]
    longer = [*TRANSCRIPT, ("user", "She is two years old.")]
    grown = recallstore.sync.capture(store, ANA, longer, conversation_id="c1")
    assert grown.added == 1
    assert len(recallstore.sync.scope_records(store, ANA)) == 3
    hits = store.search(MemorySearchQuery(scope=BO, query="Miso"))
    assert hits == []  # another user sees nothing


def test_capture_survives_a_reopen_and_stays_idempotent(tmp_path: Path) -> None:
    with SyncMemoryStore(tmp_path / "memory.db") as store:
        recallstore.sync.capture(store, ANA, TRANSCRIPT, conversation_id="c1")
    with SyncMemoryStore(tmp_path / "memory.db") as store:
        assert recallstore.sync.capture(store, ANA, TRANSCRIPT, conversation_id="c1").added == 0
        prompt = recallstore.sync.memory_prompt(store, ANA, "What is my cat called?")
        assert "Miso" in prompt


def test_sync_and_async_capture_write_the_same_records(tmp_path: Path) -> None:
    with SyncMemoryStore(tmp_path / "sync.db") as store:
        made = recallstore.sync.capture(store, ANA, TRANSCRIPT, conversation_id="c1", tags=["t"])

    async def with_async() -> recallstore.CaptureResult:
        async with SqliteMemoryStore(tmp_path / "sync.db") as opened:
            return await recallstore.capture(
                opened, ANA, TRANSCRIPT, conversation_id="c1", tags=["t"]
            )

    again = asyncio.run(with_async())
    assert again.added == 0  # the async capture recognises what the sync one wrote
    assert [r.id for r in again.records] == [r.id for r in made.records]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"transcript": "not a list"}, "transcript"),
        ({"transcript": [("user", "hi"), 42]}, "transcript[1]"),
        ({"conversation_id": "  "}, "conversation_id"),
        ({"roles": "user"}, "roles"),
        ({"tool_calls": "all"}, "tool_calls"),
        ({"max_chunk_chars": 0}, "max_chunk_chars"),
        ({"tags": "abc"}, "tags"),
        ({"scope": {"user": 5}}, "scope"),
    ],
)
def test_bad_capture_input_is_refused_and_nothing_is_written(
    store: SyncMemoryStore, arguments: dict[str, Any], field: str
) -> None:
    call: dict[str, Any] = {"scope": ANA, "transcript": TRANSCRIPT, "conversation_id": "c1"}
    call |= arguments
    scope = call.pop("scope")
    transcript = call.pop("transcript")
    with pytest.raises((MemoryValidationError, ConfigurationError)) as raised:
        recallstore.sync.capture(store, scope, transcript, **call)
    if isinstance(raised.value, MemoryValidationError):
        assert raised.value.field == field
    assert store.search(MemorySearchQuery(limit=10, include_invalidated=True)) == []


def test_an_async_store_is_refused_with_what_to_use(tmp_path: Path) -> None:
    async_store = SqliteMemoryStore(tmp_path / "memory.db")
    with pytest.raises(ConfigurationError, match=r"sync\.capture takes .*SyncMemoryStore"):
        recallstore.sync.capture(async_store, ANA, TRANSCRIPT, conversation_id="c1")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"sync\.consolidate takes"):
        recallstore.sync.consolidate(async_store, ANA)  # type: ignore[arg-type]


def test_a_closed_store_refuses_every_call(tmp_path: Path) -> None:
    store = SyncMemoryStore(tmp_path / "memory.db")
    recallstore.sync.capture(store, ANA, TRANSCRIPT, conversation_id="c1")
    store.close()
    with pytest.raises(StoreUnavailableError):
        recallstore.sync.capture(store, ANA, TRANSCRIPT, conversation_id="c2")
    with pytest.raises(StoreUnavailableError):
        recallstore.sync.consolidate(store, ANA)
    with pytest.raises(StoreUnavailableError):
        recallstore.sync.revert_plan(store, "plan_x")
    with SyncMemoryStore(tmp_path / "memory.db") as again:
        assert len(recallstore.sync.scope_records(again, ANA)) == 2  # c2 never landed


def _seed(store: SyncMemoryStore) -> list[MemoryRecord]:
    texts = ("Lives in Lisbon.", "lives in  lisbon", "I love Chinese food", "I hate Chinese food")
    written = [store.write([MemoryWriteInput(scope=ANA, content=t)])[0] for t in texts]
    store.write([MemoryWriteInput(scope=BO, content="Lives in Lisbon.")])
    return written


def test_consolidate_apply_and_revert_exactly(store: SyncMemoryStore) -> None:
    _seed(store)
    before = _everything(store)
    proposers = (*DEFAULT_PROPOSERS, SlotMatch(by_text=True))
    plan = recallstore.sync.consolidate(store, ANA, proposers=proposers)
    assert "2 change(s), 0 no-op(s), 0 rejected" in plan.diff()
    assert _everything(store) == before  # a plan changes nothing
    revision = recallstore.sync.apply_plan(store, plan)
    assert revision is not None
    assert revision.id == plan.id
    valid = [r.content for r in recallstore.sync.scope_records(store, ANA) if not r.is_invalidated]
    assert valid == ["Lives in Lisbon.", "I hate Chinese food"]
    assert recallstore.sync.consolidate(store, ANA, proposers=proposers).only_noops
    [(kept, kept_revision)] = recallstore.sync.kept_plans(store, ANA)
    assert kept.id == plan.id
    assert kept_revision.reverted_at is None
    assert recallstore.sync.read_kept_plans(store, BO).plans == []
    reverted = recallstore.sync.revert_plan(store, plan.id)
    assert reverted.id == plan.id
    assert _everything(store) == before  # every record exactly as before
    [(_, after)] = recallstore.sync.kept_plans(store, ANA)
    assert after.reverted_at is not None


def test_consolidation_errors_change_nothing(store: SyncMemoryStore) -> None:
    _seed(store)
    plan = recallstore.sync.consolidate(store, ANA)
    with pytest.raises(MemoryValidationError, match="non-empty scope"):
        recallstore.sync.consolidate(store, {})
    with pytest.raises(MemoryValidationError, match="cap"):
        recallstore.sync.consolidate(store, ANA, cap=-1)
    with pytest.raises(MemoryNotFoundError):
        recallstore.sync.revert_plan(store, "plan_nothing_kept")
    # A record the plan names changed since: the apply is refused whole.
    store.invalidate(plan.changes[0].record_id, "changed by hand")
    before = _everything(store)
    with pytest.raises(MemoryConflictError):
        recallstore.sync.apply_plan(store, plan)
    assert _everything(store) == before
    assert recallstore.sync.kept_plans(store) == []


def test_a_store_without_revise_cannot_apply(tmp_path: Path) -> None:
    with SyncMemoryStore(JsonlMemoryStore(tmp_path / "m.jsonl")) as store:
        _seed(store)
        plan = recallstore.sync.consolidate(store, ANA)
        assert plan.changes
        before = _everything(store)
        with pytest.raises(ConfigurationError, match="revise"):
            recallstore.sync.apply_plan(store, plan)
        assert _everything(store) == before


def test_forget_needs_the_extension(tmp_path: Path) -> None:
    with SyncMemoryStore(JsonlMemoryStore(tmp_path / "m.jsonl")) as store:
        (kept,) = store.write([MemoryWriteInput(scope=ANA, content="Lives in Lisbon.")])
        with pytest.raises(ConfigurationError, match="lacks the 'forget' extension"):
            store.forget(ANA)
        assert store.get(kept.id) == kept


def test_recall_chain_export_import_and_forget(store: SyncMemoryStore, tmp_path: Path) -> None:
    (old,) = store.write([MemoryWriteInput(scope=ANA, kind="profile", content="Lives in Porto.")])
    (new,) = store.write(
        [MemoryWriteInput(scope=ANA, kind="profile", content="Lives in Lisbon.", supersedes=old.id)]
    )
    recall = recallstore.sync.assemble_recall(store, ANA, "Where do I live?")
    assert [r.content for r in recall.profile] == ["Lives in Lisbon."]
    chain = recallstore.sync.supersede_chain(store, new)
    assert [link.id for link in chain.links] == [old.id, new.id]
    out = io.StringIO()
    assert recallstore.sync.export_jsonl(store, out, scope=ANA) == 2
    records = recallstore.jsonl.read_jsonl(out.getvalue().splitlines())
    assert store.forget(ANA) == 2
    assert store.get(new.id) is None
    with pytest.raises(MemoryValidationError):
        store.forget({})
    result = recallstore.sync.import_records(store, records)
    assert (result.inserted, result.skipped) == (2, 0)
    assert store.get(new.id) == new


def test_iterators_are_blocking_generators(store: SyncMemoryStore) -> None:
    written = store.write([MemoryWriteInput(scope=ANA, content=f"Fact {n}.") for n in range(3)])
    store.write([MemoryWriteInput(scope=BO, content="Bo's fact.")])
    listed = list(recallstore.sync.iter_records(store, ANA))
    assert [r.id for r in listed] == [r.id for r in written]
    events = list(recallstore.sync.tail_events(store, last=10))
    assert [e.type for e in events] == ["agent.memory.write", "agent.memory.write"]
    # A following tail would wait for ever; leaving it early closes it on the loop.
    following = recallstore.sync.tail_events(store, last=2, follow=True, scope=ANA)
    first = next(following)
    assert first.scope == ANA
    following.close()
    assert store.get(written[0].id) == written[0]  # the loop is free for other calls
    with pytest.raises(ConfigurationError, match=r"sync\.iter_records takes"):
        recallstore.sync.iter_records(SqliteMemoryStore("unused.db"), ANA)  # type: ignore[arg-type]
