"""The README demo: a scripted agent with memory, over two conversations on a SQLite file.

Conversation 1 learns about the user and corrects a fact with ``supersedes``;
conversation 2 opens in other words than the memories ("somewhere near me", "nothing
with meat") and starts with the recall block in its system prompt — the corrected
fact, not the superseded one, found by meaning (the default embedder, when the
``semantic`` extra is installed) — and searches memory on demand. Fully offline: the
"model" is a :class:`~recallstore.scripted.ScriptedModel`, the embedder a local model.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from recallstore.capability import MemoryCapability
from recallstore.embedding import Embedder, default_embedder
from recallstore.errors import MissingDependencyError
from recallstore.load import load_memory_store
from recallstore.recall import assemble_recall
from recallstore.records import MAX_LIMIT, MemorySearchQuery
from recallstore.scripted import (
    Message,
    Reply,
    ScriptedConversation,
    ScriptedModel,
    ToolCall,
    last_result,
)
from recallstore.store import MemoryStore

__all__ = ["DEMO_SCOPE", "run_demo"]

DEMO_SCOPE = {"tenant": "demo", "user": "ana"}
"""The memory scope the demo writes to (and clears before it starts)."""

_SESSION = {**DEMO_SCOPE, "locale": "en-GB"}  # locale is session data, not memory scope
_RULE = "─" * 72


def _supersede_first_hit(messages: Sequence[Message]) -> ToolCall:
    old_id = last_result(messages)["memories"][0]["id"]
    return ToolCall(
        "memory_save",
        {
            "content": "Ana's home city is Lisbon; she moved there from Berlin.",
            "kind": "fact",
            "tags": ["home"],
            "supersedes": old_id,
        },
    )


def _first_conversation_model() -> ScriptedModel:
    return ScriptedModel(
        [
            ToolCall("memory_search", {"query": "Ana vegetarian Berlin answers"}),
            ToolCall(
                "memory_save",
                {"content": "The user's name is Ana.", "kind": "profile", "tags": ["identity"]},
            ),
            ToolCall(
                "memory_save",
                {"content": "Prefers short, direct answers.", "kind": "preference"},
            ),
            ToolCall(
                "memory_save", {"content": "Ana is vegetarian.", "kind": "fact", "tags": ["food"]}
            ),
            ToolCall(
                "memory_save",
                {"content": "Ana's home city is Berlin.", "kind": "fact", "tags": ["home"]},
            ),
            Reply("Nice to meet you, Ana! I'll remember that."),
            ToolCall("memory_search", {"query": "home city"}),
            _supersede_first_hit,
            Reply("Got it: Lisbon it is. I've updated my notes."),
        ]
    )


def _second_conversation_model() -> ScriptedModel:
    return ScriptedModel(
        [
            ToolCall("memory_search", {"query": "answers", "kinds": ["preference"]}),
            Reply(
                "Try a vegetarian tasca in Lisbon's Alfama: short menu, all meat-free. "
                "(Kept it brief, as you like.)"
            ),
        ]
    )


def _arguments(arguments: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items()
    )


def _describe(result: Mapping[str, Any]) -> str:
    if not result.get("ok"):
        error = result["error"]
        return f"error {error['code']}: {error['message']}"
    if "memories" in result:
        found = [f"{m['id']} ({m['kind']}) {m['content']}" for m in result["memories"]]
        return f"{result['count']} found" + "".join(f"\n{' ' * 12}{line}" for line in found)
    if "memory" in result:
        memory = result["memory"]
        text = f"saved {memory['id']} ({memory['kind']})"
        if result.get("superseded_id"):
            text += f", superseding {result['superseded_id']}"
        return text
    return f"invalidated {result['id']}"


def _printer(out: Callable[[str], None]) -> Callable[[Message], None]:
    def show(message: Message) -> None:
        if message.role == "user":
            out(f"  user    > {message.content}")
        elif message.role == "assistant" and message.tool_call is not None:
            call = message.tool_call
            out(f"  model   → {call.name}({_arguments(call.arguments)})")
        elif message.role == "assistant":
            out(f"  model   > {message.content}")
        elif message.role == "tool" and message.result is not None:
            out(f"  tool    ← {_describe(message.result)}")

    return show


async def _forget_earlier_runs(store: MemoryStore) -> int:
    forgotten = 0
    listing = MemorySearchQuery(
        scope=DEMO_SCOPE, include_invalidated=True, include_expired=True, limit=MAX_LIMIT
    )
    while hits := await store.search(listing):
        for hit in hits:
            await store.delete(hit.record.id)
        forgotten += len(hits)
    return forgotten


def _demo_embedder(out: Callable[[str], None]) -> Embedder | None:
    """The default embedder, or None (keyword search) with a note when it is missing."""
    try:
        embedder = default_embedder()
    except MissingDependencyError as exc:
        out(f"Embedder: none, keyword search only ({exc.install_command} recalls by meaning)")
        return None
    out(f"Embedder: {embedder.name} (hybrid search: words and meaning)")
    return embedder


async def run_demo(
    db_path: Path, *, out: Callable[[str], None] = print, semantic: bool = True
) -> None:
    """Run the two-conversation demo on the SQLite file ``db_path``, narrating to ``out``.

    With ``semantic`` the store uses the default embedder when the ``semantic`` extra is
    installed (keyword search, said so, when it is not). Memories left in
    :data:`DEMO_SCOPE` by an earlier run are forgotten first, so every run tells the
    same story.
    """
    db_path = Path(db_path)
    embedder = _demo_embedder(out) if semantic else None
    async with load_memory_store(str(db_path), embedder=embedder) as store:
        forgotten = await _forget_earlier_runs(store)
        if forgotten:
            out(f"(cleared {forgotten} memories left in the demo scope by an earlier run)")
        capability = MemoryCapability(store, scope_fields=("tenant", "user"), author="demo-agent")

        out(_RULE)
        out(f"Conversation 1 — session {_SESSION}, memory scope {DEMO_SCOPE}")
        out(_RULE)
        first_text = "Hi! I'm Ana. I'm vegetarian, I live in Berlin, and I like short answers."
        first = await capability.instantiate(
            _SESSION, conversation_id="demo-conversation-1", first_user_text=first_text
        )
        out("  (nothing recalled yet: the system prompt holds only the memory manual)")
        conversation = ScriptedConversation(
            _first_conversation_model(),
            first.toolbox,
            system_prompt=first.instructions,
            on_message=_printer(out),
        )
        await conversation.send(first_text)
        await conversation.send("Actually, I moved to Lisbon last month.")

        out("")
        out(_RULE)
        out("Conversation 2 — a new conversation, same user")
        out(_RULE)
        # No word of it is in a memory: keyword search alone recalls the profile only. No
        # time phrase either ("tonight" read as a window recalled what was said this
        # evening, so the story changed with the hour it was told at).
        second_text = "Any ideas for dinner somewhere near me? Nothing with meat."
        second = await capability.instantiate(
            _SESSION, conversation_id="demo-conversation-2", first_user_text=second_text
        )
        out("  The system prompt starts with what memory recalled for the first message:")
        out("")
        for line in (second.recall_block or "(nothing recalled)").splitlines():
            out(f"    {line}")
        out("")
        out(
            f"  recall: {second.recall.profile_count} profile + {second.recall.hit_count} hits, "
            f"{second.recall.used_chars}/{second.recall.budget_chars} chars, "
            f"omitted {second.recall.omitted}"
        )
        async with load_memory_store(str(db_path)) as keyword_only:
            by_words = await assemble_recall(keyword_only, DEMO_SCOPE, second_text)
        out(
            f"  keyword search alone would recall {by_words.profile_count} profile + "
            f"{by_words.hit_count} hits: the message shares no word with the memories"
        )
        conversation = ScriptedConversation(
            _second_conversation_model(),
            second.toolbox,
            system_prompt=second.instructions,
            on_message=_printer(out),
        )
        await conversation.send(second_text)

        out("")
        out("Audit trail (nothing was overwritten; the old fact is invalidated, not lost):")
        history = await store.search(
            MemorySearchQuery(scope=DEMO_SCOPE, include_invalidated=True, limit=MAX_LIMIT)
        )
        for hit in reversed(history):
            record = hit.record
            note = f"  [superseded by {record.superseded_by}]" if record.superseded_by else ""
            out(f"  {record.id}  {record.kind:<10}  {record.content}{note}")
    out("")
    out(f"Memory database: {db_path}")
    with_embedder = " --embedder default" if embedder is not None else ""
    out(f"Open the memory lens dashboard: {cli_command()} serve --db {db_path}{with_embedder}")


def cli_command() -> str:
    """How to type the ``recallstore`` command here: its name when it is on PATH,
    otherwise the script beside this interpreter (e.g. ``.venv/bin/recallstore``)."""
    beside = Path(sys.executable).with_name("recallstore")
    on_path = shutil.which("recallstore")
    if on_path is not None and (not beside.exists() or Path(on_path).samefile(beside)):
        return "recallstore"
    if beside.exists():
        relative = os.path.relpath(beside)
        return relative if not relative.startswith("..") else str(beside)
    return "recallstore"
