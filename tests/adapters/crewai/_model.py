"""A scripted CrewAI LLM: CrewAI's own ``BaseLLM`` extension point, offline.

Each step is the model's text (CrewAI's ReAct format), or a function of the messages it
is shown returning it; every call's messages are kept in ``calls``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from crewai.llms.base_llm import BaseLLM

Step = str | Callable[[list[dict[str, Any]]], str]


class ScriptedLLM(BaseLLM):
    """Answers each call with the next step of the script."""

    def __init__(self, steps: Sequence[Step]) -> None:
        super().__init__(model="scripted")
        self._steps = list(steps)
        self._calls: list[list[dict[str, Any]]] = []

    @property
    def calls(self) -> list[list[dict[str, Any]]]:
        return self._calls

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        shown = [dict(m) for m in messages] if isinstance(messages, list) else []
        self._calls.append(shown)
        step = self._steps.pop(0)
        return step(shown) if callable(step) else step

    def supports_function_calling(self) -> bool:
        return False

    def system(self, call: int) -> str:
        """The system prompt of model call ``call``."""
        return "\n".join(str(m["content"]) for m in self._calls[call] if m["role"] == "system")


def act(name: str, arguments: dict[str, Any]) -> str:
    """The model's text calling tool ``name``."""
    return f"Thought: use memory\nAction: {name}\nAction Input: {json.dumps(arguments)}"


def answer(text: str) -> str:
    return f"Thought: I now know the final answer\nFinal Answer: {text}"


def observations(messages: list[dict[str, Any]]) -> list[Any]:
    """The tool results (parsed) the model is shown, in order."""
    found = []
    for message in messages:
        for match in re.finditer(r"Observation: (\{.*?\})\s*(?:\n|$)", str(message["content"])):
            found.append(json.loads(match.group(1)))
    return found
