"""A hand-written agent loop with memory: no framework, no network.

Two conversations with the same user on a SQLite file. Each conversation:

1. builds a ``MemoryToolbox`` bound to the user's scope,
2. assembles the turn-1 recall for the first user message and renders it into the
   system prompt (``render_recall``) after the memory manual,
3. loops: ask the model, run any tool call through ``toolbox.call``, feed the result
   back, until the model replies.

The "model" is a ``ScriptedModel`` that follows a script, so this runs offline. With a
real LLM, send ``toolbox.openai_tools()`` (or ``anthropic_tools()``) as its tools and
keep the loop exactly as it is.

Run: ``python examples/agent_loop.py [DB_PATH]`` (default: a temporary file).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.prompt import render_recall
from recallstore.recall import assemble_recall
from recallstore.scripted import Message, Reply, ScriptedModel, StepSource, ToolCall, last_result
from recallstore.store import MemoryStore
from recallstore.toolbox import MemoryToolbox

SCOPE = {"tenant": "acme", "user": "u_42"}
MAX_TOOL_CALLS_PER_TURN = 8


async def agent_turn(
    model: ScriptedModel, toolbox: MemoryToolbox, messages: list[Message], user_text: str
) -> str:
    """One user turn: model ↔ tools until the model answers in text."""
    messages.append(Message(role="user", content=user_text))
    print(f"  user  > {user_text}")
    for _ in range(MAX_TOOL_CALLS_PER_TURN):
        step = model.respond(messages)
        if isinstance(step, Reply):
            messages.append(Message(role="assistant", content=step.text))
            print(f"  model > {step.text}")
            return step.text
        print(f"  model → {step.name}({json.dumps(dict(step.arguments))})")
        result = await toolbox.call(step.name, dict(step.arguments))
        print(f"  tool  ← {_summary(result)}")
        messages.append(Message(role="assistant", tool_call=step))
        messages.append(Message(role="tool", content=json.dumps(result), result=result))
    raise RuntimeError(f"no reply after {MAX_TOOL_CALLS_PER_TURN} tool calls")


def _summary(result: dict[str, object]) -> str:
    text = json.dumps(result)
    return text if len(text) <= 110 else text[:109] + "…"


async def conversation(
    store: MemoryStore, conversation_id: str, script: Sequence[StepSource], turns: Sequence[str]
) -> ScriptedModel:
    """Run one conversation; returns the model, whose ``requests`` show what it saw."""
    toolbox = MemoryToolbox(store, SCOPE, conversation_id=conversation_id, author="example-agent")
    recall = await assemble_recall(store, SCOPE, turns[0], conversation_id=conversation_id)
    block = render_recall(recall)
    system_prompt = toolbox.manual if block is None else f"{toolbox.manual}\n\n{block}"

    print(f"\n=== {conversation_id} ===")
    print(f"  tools offered: {[tool['function']['name'] for tool in toolbox.openai_tools()]}")
    print("  recall block in the system prompt:")
    print("\n".join(f"    {line}" for line in (block or "(nothing recalled)").splitlines()))

    model = ScriptedModel(script)
    messages = [Message(role="system", content=system_prompt)]
    for text in turns:
        await agent_turn(model, toolbox, messages, text)
    return model


def _supersede_team(messages: Sequence[Message]) -> ToolCall:
    # The script reads the id the search just returned, as a real model would.
    old = last_result(messages)["memories"][0]
    return ToolCall(
        "memory_save",
        {"content": "Works on the payments team.", "kind": "fact", "supersedes": old["id"]},
    )


FIRST_SCRIPT: list[StepSource] = [
    ToolCall("memory_save", {"content": "Prefers metric units.", "kind": "preference"}),
    ToolCall("memory_save", {"content": "Works on the billing team.", "kind": "fact"}),
    Reply("Noted: metric units, billing team."),
    ToolCall("memory_search", {"query": "team"}),
    _supersede_team,
    Reply("Updated: you are on the payments team now."),
]
SECOND_SCRIPT: list[StepSource] = [
    Reply("You're on the payments team, and I'll keep to metric units."),
]


async def main(db_path: Path) -> None:
    async with SqliteMemoryStore(db_path) as store:
        await conversation(
            store,
            "conversation-1",
            FIRST_SCRIPT,
            [
                "I use metric units and work on the billing team.",
                "Correction: I moved to payments.",
            ],
        )
        model = await conversation(
            store, "conversation-2", SECOND_SCRIPT, ["Which team am I on, and which units?"]
        )
    system_prompt = model.requests[0][0].content
    print("\nThe second conversation's model saw the corrected fact:")
    print(f"  'payments team' in its system prompt: {'payments team' in system_prompt}")
    print(f"  'billing team' in its system prompt:  {'billing team' in system_prompt}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "db", nargs="?", type=Path, help="SQLite file to keep (default: a temporary one)"
    )
    given = parser.parse_args().db
    if given is not None:
        asyncio.run(main(given))
    else:
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(main(Path(folder) / "memory.db"))
