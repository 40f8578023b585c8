"""``ScriptedModel``: an offline test double of an LLM that follows a script.

Inspired by pydantic-ai's ``TestModel``/``FunctionModel``: each time it is asked to
respond it returns the next step of its script — a tool call or a text reply. A step
may be a function of the transcript so far, so a script can use an id a tool just
returned. :class:`ScriptedConversation` is the smallest agent loop around it: it sends
tool calls through a :class:`~recallstore.toolbox.MemoryToolbox` (real dispatch, real
store) until the model replies.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from recallstore.errors import RecallstoreError
from recallstore.toolbox import MemoryToolbox

__all__ = [
    "Message",
    "Reply",
    "ScriptExhaustedError",
    "ScriptedConversation",
    "ScriptedModel",
    "Step",
    "StepSource",
    "ToolCall",
    "last_result",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A step where the model calls a tool with these arguments."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Reply:
    """A step where the model answers the user in text, ending its turn."""

    text: str


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of a transcript. ``result`` is set on ``tool`` messages."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_call: ToolCall | None = None
    result: Mapping[str, Any] | None = None


Step = ToolCall | Reply
"""One turn of a scripted model: a tool call or a final reply."""
StepSource = Step | Callable[[Sequence[Message]], Step]
"""A script entry: a step, or a function of the transcript so far that returns one."""


class ScriptExhaustedError(RecallstoreError):
    """The scripted model was asked to respond after its last step."""


class ScriptedModel:
    """A deterministic stand-in for an LLM: responds with the next step of ``script``.

    ``requests`` records every transcript it was shown, so a test can check exactly
    what the model saw (e.g. that the system prompt holds the recall block).
    """

    def __init__(self, script: Iterable[StepSource]) -> None:
        self._script = list(script)
        self._position = 0
        self.requests: list[tuple[Message, ...]] = []

    @property
    def remaining(self) -> int:
        """Steps not yet played."""
        return len(self._script) - self._position

    def respond(self, messages: Sequence[Message]) -> Step:
        """The next step, given the transcript so far."""
        self.requests.append(tuple(messages))
        if self._position >= len(self._script):
            raise ScriptExhaustedError(
                f"the script has {len(self._script)} steps and all were played"
            )
        source = self._script[self._position]
        self._position += 1
        return source if isinstance(source, ToolCall | Reply) else source(messages)


class ScriptedConversation:
    """A minimal agent loop: model ↔ toolbox until the model replies to each user message."""

    def __init__(
        self,
        model: ScriptedModel,
        toolbox: MemoryToolbox,
        *,
        system_prompt: str,
        on_message: Callable[[Message], None] | None = None,
    ) -> None:
        self.model = model
        self.toolbox = toolbox
        self.messages: list[Message] = []
        self._on_message = on_message
        self._append(Message(role="system", content=system_prompt))

    def _append(self, message: Message) -> None:
        self.messages.append(message)
        if self._on_message is not None:
            self._on_message(message)

    async def send(self, user_text: str, *, max_steps: int = 16) -> str:
        """Add a user message and run the loop until the model replies; return the reply.

        At most ``max_steps`` tool calls are run per user message, so a runaway script
        stops itself with :class:`ScriptExhaustedError`.
        """
        self._append(Message(role="user", content=user_text))
        for _ in range(max_steps):
            step = self.model.respond(self.messages)
            if isinstance(step, Reply):
                self._append(Message(role="assistant", content=step.text))
                return step.text
            self._append(Message(role="assistant", tool_call=step))
            result = await self.toolbox.call(step.name, dict(step.arguments))
            self._append(
                Message(role="tool", content=json.dumps(result, ensure_ascii=False), result=result)
            )
        raise ScriptExhaustedError(f"no reply after {max_steps} tool calls")

    def last_result(self) -> Mapping[str, Any]:
        """The most recent tool result (for script steps that reuse a returned id)."""
        return last_result(self.messages)


def last_result(messages: Sequence[Message]) -> Mapping[str, Any]:
    """The most recent tool result in ``messages``; raises LookupError when there is none."""
    for message in reversed(messages):
        if message.result is not None:
            return message.result
    raise LookupError("no tool result in the transcript yet")
