"""An agent process writing memories while ``recallstore serve`` runs in another.

The store keeps an event journal (SQLite's default), so the lens started with::

    recallstore serve --db memory.db

shows this process's writes, searches and recalls live, and a dashboard that
reconnects after the server restarts resumes exactly where it stopped.

Each line read from stdin starts a conversation through ``MemoryCapability`` (the
turn-1 recall searches the store) and saves the line as a memory with the
``memory_save`` tool; the saved record's id is printed as one line of JSON. An empty
line or end of input stops it.

Run: ``python examples/agent_beside_the_lens.py memory.db`` and type a few lines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from recallstore import MemoryCapability
from recallstore.backends.sqlite import SqliteMemoryStore

SESSION = {"tenant": "acme", "user": "u_42"}


async def main(db_path: str) -> None:
    async with SqliteMemoryStore(db_path) as store:
        memory = MemoryCapability(store, scope_fields=("tenant", "user"))
        print(json.dumps({"ready": True}), flush=True)
        turn = 0
        loop = asyncio.get_running_loop()
        while line := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
            turn += 1
            conversation = await memory.instantiate(
                SESSION, conversation_id=f"conv-{turn}", first_user_text=line
            )
            result = await conversation.toolbox.call("memory_save", {"content": line})
            print(json.dumps({"saved": result["memory"]["id"]}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "db", nargs="?", default="memory.db", help="SQLite file (default memory.db)"
    )
    asyncio.run(main(parser.parse_args().db))
