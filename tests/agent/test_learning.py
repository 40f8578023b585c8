"""Memory that learns (issue 39), end to end: a scripted agent over five conversations.

A preference the user teaches in three conversations is one record with three
supports; it passes the host's gate, appears in conversation 5's system prompt as a
learned line naming those three conversations, and a demote puts the prompt back byte
for byte. The gate holds against too little evidence, a contradicted lesson and a
missing approval; a model's tool call cannot promote; another scope never sees it.
Real stores: an SQLite file, a PostgreSQL schema and the in-memory store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.postgres_server import postgres_schema, postgres_url

from recallstore import (
    InMemoryMemoryStore,
    MemoryCapability,
    MemoryInstance,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStore,
    MemoryTarget,
    MemoryWriteInput,
    PromotionGate,
    PromotionRefusedError,
    Provenance,
)
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.prompt import LEARNED_OPEN, RECALL_OPEN
from recallstore.scripted import (
    Reply,
    ScriptedConversation,
    ScriptedModel,
    StepSource,
    ToolCall,
)
from recallstore.store import SupportsPromotion, conversations_of
from recallstore.toolset import MEMORY_TOOLS

__all__ = ["postgres_schema", "postgres_url"]

ANA = {"user": "ana"}
BO = {"user": "bo"}
METRIC = "Always answer in metric units."
BACKGROUND = MemoryTarget(section="background")
HEURISTIC = MemoryTarget(section="heuristic")
HOST_GATE = PromotionGate(
    min_supports=3, min_conversations=3, approval_for=frozenset({"heuristic", "awareness"})
)
"""The host's policy: three pieces of evidence from three conversations; heuristics and
awareness domains only with a person's approval."""


@pytest.fixture(params=["sqlite", "memory", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    backend: MemoryStore
    if request.param == "sqlite":
        backend = SqliteMemoryStore(tmp_path / "memory.db")
    elif request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        backend = PostgresMemoryStore(url, schema=request.getfixturevalue("postgres_schema"))
    else:
        backend = InMemoryMemoryStore()
    async with backend:
        yield backend


def _learning(store: MemoryStore) -> SupportsPromotion:
    assert isinstance(store, SupportsPromotion)
    return store


async def _conversation(
    capability: MemoryCapability,
    scope: dict[str, str],
    conversation_id: str,
    user_text: str,
    steps: list[StepSource],
) -> tuple[MemoryInstance, ScriptedConversation]:
    instance = await capability.instantiate(
        scope, conversation_id=conversation_id, first_user_text=user_text
    )
    chat = ScriptedConversation(
        ScriptedModel(steps), instance.toolbox, system_prompt=instance.instructions
    )
    await chat.send(user_text)
    return instance, chat


async def _saved(store: MemoryStore, content: str) -> list[MemoryRecord]:
    """Every valid record of Ana's scope saying ``content``."""
    hits = await store.search(MemorySearchQuery(query=content, scope=ANA))
    return [hit.record for hit in hits if hit.record.content == content]


async def _prompt(capability: MemoryCapability, scope: dict[str, str], conversation: str) -> str:
    instance = await capability.instantiate(
        scope, conversation_id=conversation, first_user_text="In which units should you answer me?"
    )
    return instance.instructions


async def test_a_lesson_taught_three_times_is_learned_and_unlearned(store: MemoryStore) -> None:
    capability = MemoryCapability(store, scope_fields=("user",))
    teach: list[StepSource] = [
        ToolCall("memory_save", {"content": METRIC, "kind": "preference"}),
        Reply("noted"),
    ]
    await _conversation(capability, ANA, "c-1", "Please use metric units.", teach)
    await _conversation(capability, ANA, "c-2", "Metric, please, always.", teach)
    # Conversation 3 is about something else, and the model tries to promote on its own.
    _, third = await _conversation(
        capability,
        ANA,
        "c-3",
        "My sister is called Rita.",
        [
            ToolCall("memory_save", {"content": "Ana's sister is called Rita."}),
            ToolCall("memory_promote", {"id": "m1", "target": "background"}),
            Reply("ok"),
        ],
    )
    assert third.last_result()["error"]["code"] == "unknown_tool"
    await _conversation(capability, ANA, "c-4", "Again: metric units!", teach)

    (lesson,) = await _saved(store, METRIC)
    assert lesson.supports == tuple(
        Provenance(conversation_id=c, author=None) for c in ("c-1", "c-2", "c-4")
    )
    assert conversations_of(lesson) == ("c-1", "c-2", "c-4")
    assert await _learning(store).promotions(ANA) == [], "nothing promotes by itself"

    before = await _prompt(capability, ANA, "c-5")
    assert LEARNED_OPEN not in before
    promoted = await _learning(store).promote(
        ANA, lesson.id, BACKGROUND, gate=HOST_GATE, actor="host", reason="taught in 3 chats"
    )
    assert {p.conversation_id for p in promoted.evidence} == {"c-1", "c-2", "c-4"}

    instance, fifth = await _conversation(
        capability, ANA, "c-5", "In which units should you answer me?", [Reply("Metric.")]
    )
    system = fifth.model.requests[0][0].content
    line = f"- {METRIC} [learned from conversations c-1, c-2, c-4; record {lesson.id}]"
    assert line in system.splitlines()
    assert system.index(LEARNED_OPEN) < system.rindex(RECALL_OPEN), "apart from the notes"
    assert instance.recall_block is not None
    assert METRIC in instance.recall_block, "the note stays a note too"
    assert instance.learned is not None
    assert instance.learned.source_of(lesson.id) == ("c-1", "c-2", "c-4")
    assert LEARNED_OPEN not in await _prompt(capability, BO, "b-1"), "another scope saw it"

    await _learning(store).demote(ANA, lesson.id, actor="person:ana", reason="not any more")
    assert await _prompt(capability, ANA, "c-5") == before
    ledger = await _learning(store).ledger(ANA, record_id=lesson.id)
    assert [(row.action, row.actor) for row in ledger] == [
        ("corroborate", "tool:memory_save"),
        ("corroborate", "tool:memory_save"),
        ("promote", "host"),
        ("demote", "person:ana"),
    ]


async def _taught(store: MemoryStore, content: str, conversations: list[str]) -> str:
    (record,) = await store.write(
        [
            MemoryWriteInput(
                scope=ANA, content=content, provenance=Provenance(conversation_id=conversations[0])
            )
        ]
    )
    for conversation in conversations[1:]:
        await _learning(store).corroborate(
            ANA, record.id, Provenance(conversation_id=conversation), actor="host", reason="again"
        )
    return record.id


async def test_the_gate_keeps_what_has_not_earned_it_out_of_the_prompt(
    store: MemoryStore,
) -> None:
    capability = MemoryCapability(store, scope_fields=("user",))
    learning = _learning(store)
    thin = await _taught(store, "Answer in French.", ["c-1", "c-2"])
    contradicted = await _taught(store, "Answer in miles.", ["c-1", "c-2", "c-3"])
    await store.write(
        [MemoryWriteInput(scope=ANA, content="Answer in km.", supersedes=contradicted)]
    )
    unapproved = await _taught(store, "Prefer trains to planes.", ["c-1", "c-2", "c-3"])
    before = await _prompt(capability, ANA, "c-9")
    cases = [(thin, BACKGROUND), (contradicted, BACKGROUND), (unapproved, HEURISTIC)]
    for record_id, target in cases:
        with pytest.raises(PromotionRefusedError):
            await learning.promote(ANA, record_id, target, gate=HOST_GATE, actor="h", reason="r")
    assert await learning.promotions(ANA) == []
    assert await _prompt(capability, ANA, "c-9") == before
    # With a person's approval the heuristic passes; contradicted later, it leaves.
    await learning.promote(
        ANA, unapproved, HEURISTIC, gate=HOST_GATE, actor="h", reason="r", approved_by="ana"
    )
    assert "Prefer trains to planes." in await _prompt(capability, ANA, "c-9")
    await store.write(
        [MemoryWriteInput(scope=ANA, content="Prefer planes now.", supersedes=unapproved)]
    )
    assert LEARNED_OPEN not in await _prompt(capability, ANA, "c-9")


async def test_no_model_tool_promotes(store: MemoryStore) -> None:
    names = [spec.name for spec in MEMORY_TOOLS]
    assert not [name for name in names if "promot" in name or "learn" in name]
    capability = MemoryCapability(store, scope_fields=("user",))
    # The model saves the lesson five times and tries to smuggle a target into the save.
    steps: list[StepSource] = [ToolCall("memory_save", {"content": METRIC}) for _ in range(5)]
    steps.append(ToolCall("memory_save", {"content": METRIC, "target": {"section": "background"}}))
    steps.append(ToolCall("memory_save", {"content": METRIC, "promote": True}))
    steps.append(Reply("done"))
    _, chat = await _conversation(capability, ANA, "c-1", "metric!", steps)
    failures = [m.result for m in chat.messages if m.result is not None and not m.result["ok"]]
    assert [f["error"]["code"] for f in failures] == ["invalid_arguments"] * 2
    assert await _learning(store).promotions(ANA) == []
    (lesson,) = await _saved(store, METRIC)
    assert conversations_of(lesson) == ("c-1",), "one conversation is one piece of evidence"
    assert LEARNED_OPEN not in await _prompt(capability, ANA, "c-2")
