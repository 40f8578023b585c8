"""A travel agent's system prompt: its persona, then what memory gives the first turn.

Pinned by tests/test_agent_prompt.py; see docs/testing.md.
"""

from __future__ import annotations

from recallstore import MemoryStore, memory_prompt

PERSONA = "You are Wanderer, a travel assistant. Answer briefly and plan realistically."


def memory_scope(user_id: str) -> dict[str, str]:
    """The scope this agent's memories live in."""
    return {"app": "wanderer", "user": user_id}


async def build_system_prompt(store: MemoryStore, *, user_id: str, first_message: str) -> str:
    """The system prompt for a conversation that starts with ``first_message``."""
    memory = await memory_prompt(store, memory_scope(user_id), first_message)
    return f"{PERSONA}\n\n{memory}"
