"""Two conversations with memory, fully offline.

A scripted stand-in for an LLM uses the memory tools in conversation 1; conversation 2
starts with what memory recalled already in its system prompt. Swap ScriptedModel for
your framework's model and pass ``memory.toolbox.openai_tools()`` (or
``anthropic_tools()`` / ``mcp_tools()``) and ``memory.instructions`` to it.

    python examples/two_conversations.py [path/to/memory.db]

Run it again on the same file and memory is unchanged: the script, like a model, does
not save again what it already recalls.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.capability import MemoryCapability
from recallstore.scripted import (
    Reply,
    ScriptedConversation,
    ScriptedModel,
    StepSource,
    ToolCall,
    last_result,
)


async def main(db_path: Path) -> None:
    async with SqliteMemoryStore(db_path) as store:
        # Configure once: which session fields partition memory.
        capability = MemoryCapability(store, scope_fields=("tenant", "user"))
        session = {"tenant": "acme", "user": "ana", "locale": "en-GB"}

        # Conversation 1: the model learns something, then corrects it.
        first_text = "Hi, I'm Ana. I live in Berlin and I'm allergic to peanuts."
        memory = await capability.instantiate(
            session, conversation_id="conversation-1", first_user_text=first_text
        )
        # Like a real model, the script saves only what its recalled memories (in the
        # system prompt) do not already say, so a rerun on the same file adds nothing.
        recalled = memory.recall_block or ""
        facts = [
            ("name is Ana", {"content": "The user's name is Ana.", "kind": "profile"}),
            ("peanuts", {"content": "Ana is allergic to peanuts."}),
            ("Ana lives in", {"content": "Ana lives in Berlin."}),
        ]
        script: list[StepSource] = [ToolCall("memory_search", {"query": "Ana Berlin peanuts"})]
        script += [ToolCall("memory_save", save) for clue, save in facts if clue not in recalled]
        script.append(Reply("Nice to meet you, Ana!"))
        if "Lisbon" not in recalled:
            script += [
                ToolCall("memory_search", {"query": "lives in"}),
                # A step can be a function of the transcript: supersede the id just found.
                lambda messages: ToolCall(
                    "memory_save",
                    {
                        "content": "Ana lives in Lisbon (she moved from Berlin).",
                        "supersedes": last_result(messages)["memories"][0]["id"],
                    },
                ),
            ]
        script.append(Reply("Noted: Lisbon."))
        model = ScriptedModel(script)
        chat = ScriptedConversation(model, memory.toolbox, system_prompt=memory.instructions)
        print("conversation 1:")
        print("  user:", first_text)
        print("  model:", await chat.send(first_text))
        print("  user: Actually, I've just moved to Lisbon.")
        print("  model:", await chat.send("Actually, I've just moved to Lisbon."))

        # Conversation 2: recall is rendered into the system prompt before turn 1.
        second_text = "Any snack ideas for me in Lisbon? Mind what I am allergic to."
        memory = await capability.instantiate(
            session, conversation_id="conversation-2", first_user_text=second_text
        )
        model = ScriptedModel([Reply("Try roasted chickpeas: no peanuts anywhere.")])
        chat = ScriptedConversation(model, memory.toolbox, system_prompt=memory.instructions)
        reply = await chat.send(second_text)
        print()
        print("conversation 2, the system prompt the model saw:")
        print(model.requests[0][0].content)
        print()
        print("  user:", second_text)
        print("  model:", reply)


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
