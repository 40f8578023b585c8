"""The pydantic-ai model proposer, driven by pydantic-ai's FunctionModel and TestModel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from syrupy.assertion import SnapshotAssertion

from recallstore.adapters.pydantic_ai_proposer import PROPOSER_INSTRUCTIONS, ModelProposer
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.consolidation import DEFAULT_PROPOSERS, apply_plan, consolidate, kept_plans
from recallstore.records import MemoryWriteInput

ANA = {"tenant": "acme", "user": "ana"}


def _answering(answers: list[dict[str, Any] | str]) -> tuple[FunctionModel, list[str]]:
    """A model that gives ``answers`` in turn as its structured output; keeps its prompts."""
    prompts: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(str(messages[-1].parts[-1].content))  # type: ignore[union-attr]
        if not info.output_tools:
            return ModelResponse(parts=[TextPart("no output tool")])
        answer = answers.pop(0)
        if answer == "prose":
            return ModelResponse(parts=[TextPart("I would merge the two tea memories.")])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])

    return FunctionModel(respond), prompts


async def test_a_model_correction_in_another_wording_is_applied_as_a_supersede() -> None:
    async with InMemoryMemoryStore() as store:
        old, new = await store.write(
            [
                MemoryWriteInput(scope=ANA, content="Ana lives in Berlin"),
                MemoryWriteInput(scope=ANA, content="Ana moved to Lisbon last spring"),
            ]
        )
        answer = {
            "operations": [
                {
                    "action": "supersede",
                    "record_id": old.id,
                    "replaced_by": new.id,
                    "reason": "she moved",
                }
            ]
        }
        model, prompts = _answering([answer])
        plan = await consolidate(store, ANA, proposers=[ModelProposer(model)])
        assert [(op.record_id, op.superseded_by) for op in plan.changes] == [(old.id, new.id)]
        assert f"id={old.id} fact saved" in prompts[0]
        assert "Ana lives in Berlin" in prompts[0]
        await apply_plan(store, plan)
        stored = await store.get(old.id)
        assert stored is not None
        assert stored.superseded_by == new.id


async def test_malformed_output_is_asked_again_and_bad_ids_are_rejected() -> None:
    async with InMemoryMemoryStore() as store:
        (only,) = await store.write([MemoryWriteInput(scope=ANA, content="Ana likes tea")])
        (bo,) = await store.write(
            [MemoryWriteInput(scope={**ANA, "user": "bo"}, content="Bo likes tea")]
        )
        malformed = {"operations": [{"action": "duplicate", "record_id": only.id, "reason": "x"}]}
        reaching_out = {
            "operations": [
                {"action": "duplicate", "record_id": only.id, "replaced_by": bo.id, "reason": "x"}
            ]
        }
        model, prompts = _answering([malformed, reaching_out])
        plan = await consolidate(store, ANA, proposers=[ModelProposer(model)])
        assert len(prompts) == 2  # pydantic-ai asked again after the malformed answer
        assert plan.only_noops
        assert [r.problem for r in plan.rejected] == [
            "its replacement is not a valid record of this scope"
        ]
        assert await store.get(only.id) == only


async def test_test_model_output_cannot_touch_the_store() -> None:
    """A TestModel answer with invented ids: validation rejects every one."""
    async with InMemoryMemoryStore() as store:
        records = await store.write(
            [MemoryWriteInput(scope=ANA, content=f"Ana fact {n}") for n in range(3)]
        )
        invented = {
            "operations": [
                {"action": "supersede", "record_id": "a", "replaced_by": "b", "reason": "r"},
                {
                    "action": "duplicate",
                    "record_id": "c",
                    "replaced_by": records[0].id,
                    "reason": "r",
                },
            ]
        }
        model = TestModel(custom_output_args=invented)
        plan = await consolidate(store, ANA, proposers=[ModelProposer(model)])
        assert len(plan.rejected) == 2
        assert plan.only_noops
        assert all(r.problem == "not a valid record of this scope" for r in plan.rejected)
        assert [await store.get(r.id) for r in records] == records


async def test_no_records_means_no_model_call() -> None:
    model, prompts = _answering([])
    async with InMemoryMemoryStore() as store:
        assert (await consolidate(store, ANA, proposers=[ModelProposer(model)])).only_noops
    assert prompts == []


def test_proposer_instructions_snapshot(prompt_snapshot: SnapshotAssertion) -> None:
    assert json.dumps(PROPOSER_INSTRUCTIONS) == prompt_snapshot


async def test_plain_test_model_answers_within_the_schema_and_the_plan_stands(
    tmp_path: Path,
) -> None:
    # TestModel() answers whatever the output schema allows: every such answer must pass
    # validation as an operation (ids it invents are then rejected, never raised).
    async with SqliteMemoryStore(tmp_path / "m.db") as store:
        kept, copy = await store.write(
            [MemoryWriteInput(scope=ANA, content="Ana likes tea") for _ in range(2)]
        )
        proposers = [*DEFAULT_PROPOSERS, ModelProposer(TestModel())]
        plan = await consolidate(store, ANA, proposers=proposers)
        assert [(op.record_id, op.duplicate_of) for op in plan.changes] == [(copy.id, kept.id)]
        assert plan.rejected
        assert {r.proposer for r in plan.rejected} == {"pydantic-ai-model"}
        assert all(r.problem == "not a valid record of this scope" for r in plan.rejected)


def test_the_output_schema_requires_replaced_by_exactly_where_validation_does() -> None:
    seen: list[dict[str, Any]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.output_tools[0].parameters_json_schema)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"operations": []})])

    ModelProposer(FunctionModel(respond))._agent.run_sync("- id=m1 fact: x")
    (schema,) = seen
    members = {
        member["properties"]["action"]["const"]: member
        for member in schema["$defs"].values()
        if "action" in member.get("properties", {})
    }
    assert sorted(members) == ["duplicate", "noop", "supersede"]
    for action in ("supersede", "duplicate"):
        assert "replaced_by" in members[action]["required"]
    assert "replaced_by" not in members["noop"]["properties"]


async def test_an_answer_still_malformed_after_asking_again_becomes_rejections() -> None:
    async with InMemoryMemoryStore() as store:
        a, b, c = await store.write(
            [
                MemoryWriteInput(scope=ANA, content="Ana likes tea"),
                MemoryWriteInput(scope=ANA, content="Ana likes tea"),
                MemoryWriteInput(scope=ANA, content="Ana lives in Porto"),
            ]
        )
        no_target = {"action": "supersede", "record_id": c.id, "reason": "moved"}
        blank = {"action": "noop", "record_id": a.id, "reason": "   "}
        bad = {"operations": [no_target, "merge all", blank]}
        model, prompts = _answering([bad, bad])
        plan = await consolidate(store, ANA, proposers=[*DEFAULT_PROPOSERS, ModelProposer(model)])
        assert len(prompts) == 2  # asked again once, as before
        # The deterministic proposers' work stands.
        assert [(op.record_id, op.duplicate_of) for op in plan.changes] == [(b.id, a.id)]
        problems = {r.operation.record_id: r.problem for r in plan.rejected}
        assert set(problems) == {c.id, "?", a.id}
        assert "replaced_by: Field required" in problems[c.id]
        assert '"record_id": "' + c.id in problems[c.id]  # the offending answer, shown
        assert problems["?"].endswith(': "merge all"')
        assert "reason" in problems[a.id]
        assert all(r.operation.action == "noop" for r in plan.rejected)
        assert "! rejected noop of " + c.id + " from pydantic-ai-model: the model's" in plan.diff()
        await apply_plan(store, plan)
        ((stored, _),) = await kept_plans(store, ANA)
        assert stored.rejected == plan.rejected
        assert (await store.get(c.id)) == c


async def test_prose_instead_of_an_answer_is_one_rejection_not_an_error() -> None:
    async with InMemoryMemoryStore() as store:
        _, b = await store.write(
            [MemoryWriteInput(scope=ANA, content="Ana likes tea") for _ in range(2)]
        )
        model, _ = _answering(["prose", "prose"])
        plan = await consolidate(store, ANA, proposers=[*DEFAULT_PROPOSERS, ModelProposer(model)])
        assert [op.record_id for op in plan.changes] == [b.id]
        (rejection,) = plan.rejected
        assert rejection.operation.record_id == "?"
        assert rejection.problem.startswith("the model gave no usable answer: ")
