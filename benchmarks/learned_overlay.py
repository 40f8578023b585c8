"""What the learned overlay (issue 39) adds to a conversation's turn one, on SQLite.

``--users`` scopes of 20 records each; in every scope 3 records are corroborated once
and promoted (so the ledger holds 6 rows a user). Measured: ``assemble_learned`` for a
scope with 3 promotions and for a scope with none (the overlay's read on every
``instantiate``), and ``MemoryCapability.instantiate`` itself for both; medians of
``--rounds`` calls each.

    .venv/bin/python benchmarks/learned_overlay.py [--users 100] [--rounds 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from recallstore import MemoryCapability, MemoryTarget, MemoryWriteInput, PromotionGate, Provenance
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.learning import assemble_learned

_GATE = PromotionGate(min_supports=1, min_conversations=1, approval_for=frozenset())


async def _fill(store: SqliteMemoryStore, users: int) -> None:
    for user in range(users):
        scope = {"user": f"u{user}"}
        records = await store.write(
            [
                MemoryWriteInput(
                    scope=scope,
                    content=f"lesson {i} of user {user} about topic{i}",
                    provenance=Provenance(conversation_id=f"c{user}-{i}"),
                )
                for i in range(20)
            ]
        )
        for record in records[:3]:
            evidence = Provenance(conversation_id=f"again-{user}")
            await store.corroborate(scope, record.id, evidence, actor="bench", reason="again")
            await store.promote(
                scope,
                record.id,
                MemoryTarget(section="background"),
                gate=_GATE,
                actor="b",
                reason="r",
            )


async def main(users: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with SqliteMemoryStore(Path(folder) / "memory.db") as store:
            await _fill(store, users)
            capability = MemoryCapability(store, scope_fields=("user",))
            print(f"SQLite, {users * 20} records, {users * 6} ledger rows, {rounds} rounds")
            for label, scope in (("3 promotions", {"user": "u7"}), ("none", {"user": "nobody"})):
                learned, turn_one = [], []
                for n in range(rounds):
                    start = time.perf_counter()
                    await assemble_learned(store, scope)
                    learned.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    await capability.instantiate(
                        scope, conversation_id=f"b{n}", first_user_text="topic1 lesson"
                    )
                    turn_one.append(time.perf_counter() - start)
                print(
                    f"{label:>12}: assemble_learned {statistics.median(learned) * 1e3:.2f} ms, "
                    f"instantiate {statistics.median(turn_one) * 1e3:.2f} ms (medians)"
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=50)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.users, arguments.rounds))
