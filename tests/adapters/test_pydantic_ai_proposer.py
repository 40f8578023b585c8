"""The pydantic-ai model proposer, driven by pydantic-ai's FunctionModel and TestModel."""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from syrupy.assertion import SnapshotAssertion

from recallstore.adapters.pydantic_ai_proposer import PROPOSER_INSTRUCTIONS, ModelProposer
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.consolidation import apply_plan, consolidate
from recallstore.records import MemoryWriteInput

ANA = {"tenant": "acme", "user": "ana"}


def _answering(answers: list[dict[str, Any]]) -> tuple[FunctionModel, list[str]]:
    """A model that gives ``answers`` in turn as its structured output; keeps its prompts."""
    prompts: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(str(messages[-1].parts[-1].content))  # type: ignore[union-attr]
        if not info.output_tools:
            return ModelResponse(parts=[TextPart("no output tool")])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answers.pop(0))])

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
