"""assemble_recall: profile first, then hits; whole entries within a budget; deterministic."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from recallstore import InMemoryMemoryStore, MemoryStore, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.context import CallContext, current_call_context
from recallstore.prompt import recall_entry_size, recall_frame_size, render_recall
from recallstore.recall import Recall, RecallObserver, assemble_recall

SCOPE = {"tenant": "acme", "user": "ana"}


async def seed(store: MemoryStore) -> dict[str, str]:
    """A small memory for Ana (and one for someone else); returns ids by label."""
    labels = ["name", "job", "tea", "berlin", "lisbon", "other-user"]
    records = []
    for label, entry in zip(
        labels,
        [
            MemoryWriteInput(scope=SCOPE, kind="profile", content="The user's name is Ana."),
            MemoryWriteInput(scope=SCOPE, kind="profile", content="Ana works as a tea importer."),
            MemoryWriteInput(
                scope=SCOPE, kind="preference", content="Prefers green tea to coffee."
            ),
            MemoryWriteInput(scope=SCOPE, content="Ana's home city is Berlin."),
            MemoryWriteInput(
                scope=SCOPE, content="Ana's office is in Lisbon, near the tea market."
            ),
            MemoryWriteInput(scope={"tenant": "acme", "user": "bo"}, content="Bo loves tea."),
        ],
        strict=True,
    ):
        (written,) = await store.write([entry])
        records.append((label, written.id))
    return dict(records)


async def test_profile_first_then_hits_without_duplicates(store: MemoryStore) -> None:
    ids = await seed(store)
    recall = await assemble_recall(store, SCOPE, "Which tea should I order?")
    assert [r.id for r in recall.profile] == [ids["job"], ids["name"]]  # newest first
    hit_ids = [r.id for r in recall.hits]
    assert ids["job"] not in hit_ids  # it matches "tea" but is already in the profile
    assert set(hit_ids) == {ids["tea"], ids["lisbon"]}
    assert ids["other-user"] not in [r.id for r in recall.entries]
    assert (recall.profile_count, recall.hit_count) == (2, 2)
    assert recall.omitted == 0
    assert recall.truncated is False
    block = render_recall(recall)
    assert block is not None
    assert (recall.used_chars, recall.used_bytes) == (len(block), len(block.encode()))
    assert recall.scope == SCOPE


async def test_superseded_memories_are_not_recalled(store: MemoryStore) -> None:
    ids = await seed(store)
    await store.write(
        [
            MemoryWriteInput(
                scope=SCOPE, content="Ana's home city is Porto.", supersedes=ids["berlin"]
            )
        ]
    )
    recall = await assemble_recall(store, SCOPE, "home city")
    contents = [r.content for r in recall.hits]
    assert contents == ["Ana's home city is Porto."]


async def test_budget_takes_whole_entries_and_counts_the_rest(store: MemoryStore) -> None:
    await seed(store)
    full = await assemble_recall(store, SCOPE, "tea")
    sizes = [recall_entry_size(r)[0] for r in full.entries]
    omitted = len(full.entries) - 2
    # The block around two profile entries, with its note, and 5 to spare: not three.
    budget = recall_frame_size(True, False, omitted)[0] + sizes[0] + sizes[1] + 5
    recall = await assemble_recall(store, SCOPE, "tea", budget_chars=budget)
    assert recall.entries == full.entries[:2]
    assert recall.omitted == omitted
    assert recall.truncated is True
    block = render_recall(recall)
    assert block is not None
    assert recall.used_chars == len(block) == budget - 5
    assert f"[{recall.omitted} more memories were omitted" in block


async def test_the_budget_bounds_the_rendered_block(store: MemoryStore) -> None:
    await seed(store)
    for budget in range(0, 1200, 7):
        recall = await assemble_recall(store, SCOPE, "tea", budget_chars=budget)
        block = render_recall(recall) or ""
        assert (recall.used_chars, recall.used_bytes) == (len(block), len(block.encode()))
        if recall.entries:
            assert len(block) <= budget


async def test_a_later_shorter_entry_still_fits(store: MemoryStore) -> None:
    await store.write([MemoryWriteInput(scope=SCOPE, kind="profile", content="Short.")])
    await store.write([MemoryWriteInput(scope=SCOPE, kind="profile", content="A" * 100)])
    budget = recall_frame_size(True, False, 1)[0] + 80  # "Short." fits, 100 "A"s do not
    recall = await assemble_recall(store, SCOPE, "", budget_chars=budget)
    assert [r.content for r in recall.entries] == ["Short."]
    assert recall.omitted == 1


async def test_zero_budget_recalls_nothing_but_says_so(store: MemoryStore) -> None:
    await seed(store)
    recall = await assemble_recall(store, SCOPE, "tea", budget_chars=0)
    assert recall.entries == ()
    assert recall.omitted > 0
    assert recall.truncated is True
    assert render_recall(recall) is not None


async def test_empty_memory_recalls_nothing(store: MemoryStore) -> None:
    recall = await assemble_recall(store, SCOPE, "anything at all")
    assert recall.entries == ()
    assert recall.omitted == 0
    assert recall.truncated is False
    assert render_recall(recall) is None


async def test_blank_user_text_recalls_only_the_profile(store: MemoryStore) -> None:
    ids = await seed(store)
    recall = await assemble_recall(store, SCOPE, "   ")
    assert [r.id for r in recall.entries] == [ids["job"], ids["name"]]
    assert recall.hit_count == 0


async def test_limits_bound_what_is_fetched(store: MemoryStore) -> None:
    await seed(store)
    recall = await assemble_recall(store, SCOPE, "tea", limit=1, profile_limit=1)
    assert (recall.profile_count, recall.hit_count) == (1, 1)
    with pytest.raises(ValueError, match="budget_chars"):
        await assemble_recall(store, SCOPE, "tea", budget_chars=-1)


async def test_huge_user_text_is_a_valid_query(store: MemoryStore) -> None:
    await seed(store)
    recall = await assemble_recall(store, SCOPE, "tea " * 10_000 + '\x00 NEAR( "*')
    assert recall.hit_count > 0


class _ObservingStore(InMemoryMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.observed: list[tuple[Recall, CallContext]] = []

    def observe_recall(self, recall: Recall) -> None:
        self.observed.append((recall, current_call_context()))


async def test_an_observing_store_hears_each_recall_once_in_context() -> None:
    async with _ObservingStore() as store:
        assert isinstance(store, RecallObserver)
        await seed(store)
        recall = await assemble_recall(
            store, SCOPE, "tea", conversation_id="conv-7", run_id="run-7"
        )
        assert store.observed == [(recall, CallContext(conversation_id="conv-7", run_id="run-7"))]
    assert not isinstance(InMemoryMemoryStore(), RecallObserver)


_RENDER_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from recallstore.backends.sqlite import SqliteMemoryStore
    from recallstore.prompt import recall_entry_size, recall_frame_size, render_recall
    from recallstore.recall import assemble_recall

    async def main() -> None:
        async with SqliteMemoryStore(sys.argv[1]) as store:
            recall = await assemble_recall(
                store, {"tenant": "acme", "user": "ana"}, "tea in Lisbon", budget_chars=480
            )
        sys.stdout.write(render_recall(recall) or "")

    asyncio.run(main())
    """
)


@pytest.mark.slow
def test_same_store_state_renders_byte_identical_text_across_processes(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"

    async def write_memories() -> None:
        async with SqliteMemoryStore(db) as store:
            await seed(store)

    asyncio.run(write_memories())
    outputs = [
        subprocess.run(
            [sys.executable, "-c", _RENDER_SCRIPT, str(db)],
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
        for _ in range(2)
    ]
    assert outputs[0] == outputs[1]
    text = outputs[0].decode()
    assert text.startswith("<recalled_memories>\n")
    assert "The user's name is Ana." in text
    assert "omitted to fit the recall budget" in text  # the budget of 480 truncates
