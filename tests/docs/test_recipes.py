"""The smolagents and DSPy recipes of docs/integrations.md run as written, with each
framework's own agent loop (``ToolCallingAgent``, ``dspy.ReAct``) driven offline by a
scripted model (a smolagents ``Model`` answering ``ChatMessage``s, DSPy's ``DummyLM``),
on a real SQLite file: a fact saved and corrected (supersede), the next conversation's
prompt holds the correction and not the old fact, another user sees nothing, a scope
sent by the model widens nothing, two mistakes in a row do not end the run, a
conversation where the model saved nothing is captured and recalled later, and
capturing it again adds nothing."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dspy
import pytest
from dspy.utils import DummyLM
from smolagents import Model, Tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from tests.docs.test_integrations import NEW, OLD, SCOPE, check_remembered, run_snippet, snippets

import recallstore.sync
from recallstore.prompt import RECALL_CLOSE
from recallstore.sync import SyncMemoryStore

OTHER = {**SCOPE, "user": "u2"}
RECIPES = ("smolagents", "DSPy")
Step = Callable[[list[ChatMessage]], tuple[str, dict[str, Any]]]


@pytest.fixture(autouse=True)
def _no_dspy_model_left() -> Iterator[None]:
    """The DSPy test configures DSPy's model for the process; it is unset after."""
    yield
    dspy.configure(lm=None)  # type: ignore[no-untyped-call]


@pytest.fixture
def opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[SyncMemoryStore]]:
    """The recipes open ``memory.db`` in the working directory; each is closed after."""
    monkeypatch.chdir(tmp_path)
    stores: list[SyncMemoryStore] = []
    yield stores
    for store in stores:
        store.close()


def test_the_recipes_are_short() -> None:
    # Ten lines of glue: what is left after the imports and the store's opening.
    for heading in RECIPES:
        lines = [line for line in snippets()[heading].splitlines() if line.strip()]
        glue = [
            line
            for line in lines
            if not line.startswith(("import ", "from ")) and "SyncMemoryStore(" not in line
        ]
        assert len(glue) <= 10, f"{heading}: {len(glue)} lines of glue"


class _ScriptedModel(Model):
    """A smolagents model answering each step with the next scripted tool call."""

    def __init__(self, script: list[Step]) -> None:
        super().__init__(model_id="scripted")
        self.script = script
        self.seen: list[list[ChatMessage]] = []

    def generate(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        self.seen.append(list(messages))
        name, arguments = self.script.pop(0)(messages)
        function = ChatMessageToolCallFunction(name=name, arguments=arguments)
        call = ChatMessageToolCall(id=f"call_{len(self.seen)}", type="function", function=function)
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])

    def system_prompt(self) -> str:
        first = self.seen[-1][0]
        assert first.role == MessageRole.SYSTEM
        return str(first.content)


def _said(messages: list[ChatMessage]) -> str:
    """The text of the last message (a tool's observation)."""
    content = messages[-1].content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content)
    return str(content)


def _saved_id(messages: list[ChatMessage]) -> str:
    [found] = re.findall(r"'id': '(\w+)'", _said(messages))
    return str(found)


def _final(answer: str) -> Step:
    return lambda m: ("final_answer", {"answer": answer})


def test_smolagents_recipe(opened) -> None:
    script: list[Step] = [
        # Conversation 1: save, correct with supersedes, two mistakes in a row, answer.
        lambda m: ("memory_save", {"content": OLD, "kind": "profile"}),
        lambda m: ("memory_save", {"content": NEW, "kind": "profile", "supersedes": _saved_id(m)}),
        lambda m: ("memory_invalidate", {"id": "01nosuchmemory00000000000"}),
        lambda m: ("memory_search", {"query": "Lisbon", "scope": {"tenant": "acme"}}),
        _final("Noted."),
        # Conversation 2 (u1): the correction is in the prompt.
        _final("Lisbon."),
        # Conversation 3 (u2): nothing recalled, nothing found.
        lambda m: ("memory_search", {"query": "Lisbon"}),
        _final("No idea."),
        # Conversation 4 (u1): nothing saved by the model; conversation 5 recalls it.
        _final("What a lovely name!"),
        _final("Miso."),
    ]
    model = _ScriptedModel(script)
    namespace = run_snippet("smolagents", model=model)
    store: SyncMemoryStore = namespace["store"]
    opened.append(store)
    answer = namespace["answer"]

    assert answer(SCOPE, "c1", "I moved to Lisbon.") == "Noted."
    saved, mistake, refused = [_said(step) for step in model.seen[2:5]]
    assert "'ok': True" in saved  # the correction was saved
    assert "'not_found'" in mistake  # mistake 1: an unknown id, as the tool's error result
    assert "Argument scope is not in the tool's input schema" in refused  # mistake 2
    assert answer(SCOPE, "c2", "Where do I live?") == "Lisbon."
    check_remembered(model.system_prompt())

    assert answer(OTHER, "c3", "Where do I live?") == "No idea."
    assert RECALL_CLOSE not in model.system_prompt()
    assert "'count': 0" in _said(model.seen[-1])

    assert answer(SCOPE, "c4", "I adopted a cat named Miso.") == "What a lovely name!"
    assert answer(SCOPE, "c5", "What is my cat called?") == "Miso."
    assert "Miso" in model.system_prompt()
    again = recallstore.sync.capture(
        store,
        SCOPE,
        [("user", "I adopted a cat named Miso."), ("assistant", "What a lovely name!")],
        conversation_id="c4",
    )
    assert again.added == 0
    assert not model.script


def test_dspy_recipe(opened) -> None:
    def act(thought: str, tool: str, **arguments: Any) -> dict[str, Any]:
        return {"next_thought": thought, "next_tool_name": tool, "next_tool_args": arguments}

    def finish(answer: str) -> list[dict[str, Any]]:
        return [act("Done.", "finish"), {"reasoning": "As remembered.", "answer": answer}]

    # Each conversation is one ReAct loop; DummyLM answers each step in turn.
    lm = DummyLM(
        [
            act("Save it.", "memory_save", content=OLD, kind="profile"),
            *finish("Noted."),
            # Conversation 2: the recall shows the old fact as m1; correct it, after two
            # mistakes (an unknown id, an argument the tool does not take).
            act("Wrong id.", "memory_invalidate", id="m9"),
            act("Wider.", "memory_search", query="Lisbon", scope={"tenant": "acme"}),
            act("Correct m1.", "memory_save", content=NEW, kind="profile", supersedes="m1"),
            *finish("Noted."),
            *finish("Lisbon."),  # conversation 3
            act("Look.", "memory_search", query="Lisbon"),  # conversation 4, user u2
            *finish("No idea."),
            *finish("What a lovely name!"),  # conversation 5: nothing saved
            *finish("Miso."),  # conversation 6
        ]
    )
    dspy.configure(lm=lm)  # type: ignore[no-untyped-call]
    namespace = run_snippet("DSPy")
    store: SyncMemoryStore = namespace["store"]
    opened.append(store)
    answer = namespace["answer"]

    def prompt() -> str:
        return str(lm.history[-1]["messages"])

    assert answer(SCOPE, "c1", "I live in Porto.") == "Noted."
    assert answer(SCOPE, "c2", "I moved to Lisbon.") == "Noted."
    mistake, refused, saved = re.findall(r"observation_\d+ ## \]\]\\n(.*?)\\n\\n", prompt())[:3]
    assert '"code": "not_found"' in mistake  # mistake 1, as the tool's error result
    assert "Arg scope is not in the tool" in refused  # mistake 2, refused by dspy.Tool
    assert '"ok": true' in saved  # the run went on: the correction was saved
    assert answer(SCOPE, "c3", "Where do I live?") == "Lisbon."
    check_remembered(prompt().replace("\\n", "\n"))

    assert answer(OTHER, "c4", "Where do I live?") == "No idea."
    assert '"count": 0' in prompt()
    assert RECALL_CLOSE not in prompt()

    assert answer(SCOPE, "c5", "I adopted a cat named Miso.") == "What a lovely name!"
    assert answer(SCOPE, "c6", "What is my cat called?") == "Miso."
    assert "Miso" in prompt()
    again = recallstore.sync.capture(
        store,
        SCOPE,
        [("user", "I adopted a cat named Miso."), ("assistant", "What a lovely name!")],
        conversation_id="c5",
    )
    assert again.added == 0
