"""MemoryCapability: the instantiate hook binds toolbox and recall to the session's scope."""

from __future__ import annotations

from typing import Any

import pytest

from recallstore import ConfigurationError, MemoryStore, MemoryWriteInput
from recallstore.capability import MemoryCapability
from recallstore.prompt import RECALL_OPEN, recall_entry_size, recall_frame_size
from recallstore.records import MemorySearchQuery


@pytest.mark.parametrize(
    ("session", "missing"),
    [
        ({"tenant": "acme"}, ["user"]),
        ({"user": "ana"}, ["tenant"]),
        ({}, ["tenant", "user"]),
        ({"tenant": "acme", "user": ""}, ["user"]),
        ({"tenant": "acme", "user": "   "}, ["user"]),
        ({"tenant": "acme", "user": None}, ["user"]),
        ({"tenant": "acme", "user": 42}, ["user"]),
    ],
)
async def test_missing_scope_fields_are_a_clear_error(
    store: MemoryStore, session: dict[str, Any], missing: list[str]
) -> None:
    capability = MemoryCapability(store, scope_fields=("tenant", "user"))
    with pytest.raises(ConfigurationError, match="missing memory scope field") as caught:
        await capability.instantiate(session, conversation_id="c1", first_user_text="hi")
    assert f"field(s) {missing!r}" in str(caught.value)


@pytest.mark.parametrize(
    "scope_fields",
    [(), "user", ("user", "user"), ("user", "")],
)
def test_bad_scope_fields_are_refused(store: MemoryStore, scope_fields: Any) -> None:
    with pytest.raises(ConfigurationError):
        MemoryCapability(store, scope_fields=scope_fields)


async def test_instantiate_binds_toolbox_and_recall_to_the_scope(store: MemoryStore) -> None:
    await store.write(
        [
            MemoryWriteInput(
                scope={"tenant": "acme", "user": "ana"}, kind="profile", content="Ana."
            ),
            MemoryWriteInput(scope={"tenant": "acme", "user": "bo"}, kind="profile", content="Bo."),
        ]
    )
    capability = MemoryCapability(store, scope_fields=("tenant", "user"), author="helper-bot")
    session = {"tenant": "acme", "user": "ana", "locale": "pt-PT"}
    memory = await capability.instantiate(
        session, conversation_id="c1", first_user_text="hello", run_id="r1"
    )
    assert memory.scope == {"tenant": "acme", "user": "ana"}  # locale is not part of it
    assert memory.toolbox.scope == memory.scope
    assert memory.toolbox.provenance.author == "helper-bot"
    assert [r.content for r in memory.recall.entries] == ["Ana."]
    assert memory.recall_block is not None
    assert memory.recall_block.startswith(RECALL_OPEN)
    assert "Bo." not in memory.instructions
    assert memory.instructions.startswith(memory.manual)
    assert memory.instructions.endswith(memory.recall_block)

    saved = await memory.toolbox.call("memory_save", {"content": "Speaks Portuguese."})
    record = await store.get(saved["memory"]["id"])
    assert record is not None
    assert record.scope == {"tenant": "acme", "user": "ana"}
    assert record.provenance is not None
    assert (record.provenance.conversation_id, record.provenance.run_id) == ("c1", "r1")


async def test_nothing_recalled_means_no_block(store: MemoryStore) -> None:
    capability = MemoryCapability(store, scope_fields=["user"])
    memory = await capability.instantiate(
        {"user": "new"}, conversation_id="c1", first_user_text="hi"
    )
    assert memory.recall_block is None
    assert memory.instructions == memory.manual


async def test_budget_settings_reach_the_recall(store: MemoryStore) -> None:
    await store.write(
        [
            MemoryWriteInput(scope={"user": "u"}, kind="profile", content=f"{i}" * 150)
            for i in range(3)
        ]
    )
    (first, _, _) = [
        hit.record for hit in await store.search(MemorySearchQuery(scope={"user": "u"}))
    ]
    entry, _ = recall_entry_size(first)
    # Room for the block around two entries (with its note on the third), not three.
    budget = recall_frame_size(True, False, 1)[0] + 2 * entry
    capability = MemoryCapability(store, scope_fields=["user"], budget_chars=budget)
    memory = await capability.instantiate({"user": "u"}, conversation_id="c", first_user_text="")
    assert memory.recall.used_chars == budget
    assert (len(memory.recall.entries), memory.recall.omitted) == (2, 1)
    assert memory.recall.truncated is True
