"""A scope that taught one lesson in three captured conversations, distilled with a
FunctionModel, beside a note with too little evidence: what the learning page shows."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from recallstore.adapters.pydantic_ai_distiller import ModelDistiller
from recallstore.capture import capture
from recallstore.consolidation import apply_distillation, distil
from recallstore.records import MemoryRecord, MemoryWriteInput, Provenance
from recallstore.store import MemoryStore, PromotionGate

ANA = {"tenant": "acme", "user": "ana"}
LESSON = "Never book me a flight before 9 am."
GATE = PromotionGate(min_supports=3, min_conversations=3)
_LINE = re.compile(r"^- id=(\S+) conversation=\S+ turn=\S+ said \S+: (.*)$", re.M)


def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = str(messages[-1].parts[-1].content)  # type: ignore[union-attr]
    cites = [i for i, text in _LINE.findall(prompt) if "9 am" in text]
    fact = {
        "content": "Ana never flies before 9 am.",
        "kind": "preference",
        "cites": cites,
        "reason": "she said it in three conversations",
    }
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"facts": [fact]})])


@dataclass(frozen=True)
class World:
    """The records the page is about."""

    lesson: MemoryRecord
    """Distilled from c-1, c-2, c-3: passes the gate with a person's approval."""
    weak: MemoryRecord
    """Evidence from two conversations only: the gate refuses it."""


async def seed(store: MemoryStore) -> World:
    """Three captured conversations, their distilled lesson, and a weak note."""
    for n, topic in enumerate(["Paris", "Rome", "Lisbon"], start=1):
        said = [("user", f"Plan a trip to {topic}."), ("assistant", "Sure."), ("user", LESSON)]
        await capture(store, ANA, said, conversation_id=f"c-{n}")
    plan = await distil(store, ANA, [ModelDistiller(FunctionModel(_respond))])
    (lesson,) = (await apply_distillation(store, plan)).added
    evidence = (Provenance(conversation_id="c-1"), Provenance(conversation_id="c-2"))
    (weak,) = await store.write(
        [
            MemoryWriteInput(
                scope=ANA,
                content="Ana likes window seats.",
                provenance=evidence[0],
                supports=evidence,
            )
        ]
    )
    return World(lesson, weak)
