"""The pydantic-ai distiller, driven by pydantic-ai's FunctionModel and TestModel."""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from syrupy.assertion import SnapshotAssertion

from recallstore.adapters.pydantic_ai_distiller import DISTILLER_INSTRUCTIONS, ModelDistiller
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.capture import capture
from recallstore.consolidation import distil

ANA = {"tenant": "acme", "user": "ana"}


def _answering(answers: list[Any]) -> tuple[FunctionModel, list[str]]:
    """A model giving ``answers`` in turn as its structured output; keeps its prompts."""
    prompts: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(str(messages[-1].parts[-1].content))  # type: ignore[union-attr]
        answer = answers.pop(0)
        if answer == "prose":
            return ModelResponse(parts=[TextPart("Ana likes trains.")])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])

    return FunctionModel(respond), prompts


def test_distiller_instructions_snapshot(prompt_snapshot: SnapshotAssertion) -> None:
    assert json.dumps(DISTILLER_INSTRUCTIONS) == prompt_snapshot


async def test_the_model_reads_each_turn_with_its_id_conversation_and_turn() -> None:
    async with InMemoryMemoryStore() as store:
        result = await capture(store, ANA, [("user", "I take the train.")], conversation_id="c-7")
        (turn,) = result.records
        model, prompts = _answering([{"facts": []}])
        plan = await distil(store, ANA, [ModelDistiller(model)])
        assert plan.facts == ()
        assert f"- id={turn.id} conversation=c-7 turn=0 said " in prompts[0]
        assert prompts[0].endswith(": user: I take the train.")


async def test_an_answer_still_malformed_after_asking_again_becomes_rejections() -> None:
    async with InMemoryMemoryStore() as store:
        result = await capture(store, ANA, [("user", "I take the train.")], conversation_id="c-1")
        (turn,) = result.records
        good = {"content": "Ana takes the train.", "cites": [turn.id], "reason": "she said"}
        uncited = {"content": "Ana is tall.", "cites": [], "reason": "guess"}
        bad = {"facts": [good, uncited, "trains"]}
        model, prompts = _answering([bad, bad])
        plan = await distil(store, ANA, [ModelDistiller(model, name="m")])
        assert len(prompts) == 2  # pydantic-ai asked again once
        assert [f.content for f in plan.facts] == ["Ana takes the train."]
        problems = [r.problem for r in plan.rejected]
        assert "cites: List should have at least 1 item" in problems[0]
        assert problems[1].endswith(': "trains"')
        assert [r.proposer for r in plan.rejected] == ["m", "m"]


async def test_prose_instead_of_an_answer_is_one_rejection_not_an_error() -> None:
    async with InMemoryMemoryStore() as store:
        await capture(store, ANA, [("user", "I take the train.")], conversation_id="c-1")
        model, _ = _answering(["prose", "prose"])
        plan = await distil(store, ANA, [ModelDistiller(model)])
        assert plan.facts == ()
        (rejection,) = plan.rejected
        assert rejection.problem.startswith("the model gave no usable answer")


async def test_test_model_output_cannot_reach_the_store() -> None:
    """TestModel answers whatever the schema allows: its invented citations are rejected."""
    async with InMemoryMemoryStore() as store:
        await capture(store, ANA, [("user", "I take the train.")], conversation_id="c-1")
        plan = await distil(store, ANA, [ModelDistiller(TestModel())])
        assert plan.facts == ()
        assert plan.rejected
        assert all("not a valid captured record" in r.problem for r in plan.rejected)
