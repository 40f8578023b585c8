"""What ``capture`` costs beside plain writes of the same records, on each backend.

10,000 messages: 100 conversations of 100 alternating user and assistant messages (a
sentence or three each, a few over 2,000 characters, so they are split into chunks),
in 10 users' scopes. *Plain* writes the very records capture makes (same scope, kind,
content, tags, provenance, payload, observed time; no idempotency key), one
``store.write`` per conversation, as capture does; *capture* is
``capture(store, scope, transcript)`` per conversation; *again* captures every
conversation a second time (everything already there: nothing is added). Each round
uses fresh stores, the three alternate, and the median of ``--rounds`` is shown, with
the ratio to plain writes measured in the same round.

    .venv/bin/python benchmarks/capture_cost.py [--rounds 3] [--messages 10000]
        [--postgres postgresql://postgres@127.0.0.1:5432/test | --postgres '']
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.capture import capture
from recallstore.records import MemoryWriteInput
from recallstore.store import MemoryStore

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
PER_CONVERSATION = 100
USERS = 10
WORDS = [
    "trip",
    "lisbon",
    "flight",
    "hotel",
    "cat",
    "dinner",
    "friend",
    "project",
    "deadline",
    "garden",
    "book",
    "music",
    "running",
    "coffee",
    "tea",
    "weekend",
    "office",
    "meeting",
    "family",
    "school",
    "painting",
    "sister",
    "market",
]

Conversation = tuple[dict[str, str], str, list[tuple[str, str, datetime]]]


def conversations(messages: int, seed: int = 7) -> list[Conversation]:
    """``(scope, conversation id, transcript)`` for ``messages`` messages."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    made: list[Conversation] = []
    for number in range(messages // PER_CONVERSATION):
        transcript = []
        for index in range(PER_CONVERSATION):
            sentences = 40 if rng.random() < 0.01 else rng.randint(1, 3)
            text = " ".join(
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
                for _ in range(sentences)
            )
            role = "user" if index % 2 == 0 else "assistant"
            transcript.append((role, text, start + timedelta(hours=number, minutes=index)))
        made.append(({"user": f"u{number % USERS}"}, f"conv-{number}", transcript))
    return made


async def plain_inputs(made: list[Conversation]) -> list[list[dict[str, Any]]]:
    """The fields of the records capture makes, for plain write inputs (no key), one
    batch a conversation; the inputs are built inside the timing, as capture builds its."""
    batches = []
    async with InMemoryMemoryStore() as store:
        for scope, conversation_id, transcript in made:
            result = await capture(store, scope, transcript, conversation_id=conversation_id)
            batches.append(
                [
                    {
                        "scope": record.scope,
                        "kind": record.kind,
                        "content": record.content,
                        "tags": record.tags,
                        "provenance": record.provenance,
                        "payload": record.payload,
                        "observed_at": record.observed_at,
                    }
                    for record in result.records
                ]
            )
    return batches


async def timed_plain(store: MemoryStore, batches: list[list[dict[str, Any]]]) -> float:
    async with store:
        started = time.perf_counter()
        for batch in batches:
            await store.write([MemoryWriteInput(**fields) for fields in batch])
        return time.perf_counter() - started


async def timed_capture(store: MemoryStore, made: list[Conversation]) -> tuple[float, float, int]:
    async with store:
        started = time.perf_counter()
        for scope, conversation_id, transcript in made:
            await capture(store, scope, transcript, conversation_id=conversation_id)
        first = time.perf_counter() - started
        added = 0
        started = time.perf_counter()
        for scope, conversation_id, transcript in made:
            result = await capture(store, scope, transcript, conversation_id=conversation_id)
            added += result.added
        return first, time.perf_counter() - started, added


def store_makers(folder: Path, postgres: str) -> list[tuple[str, Callable[[], Any]]]:
    counter = iter(range(10_000))
    makers: list[tuple[str, Callable[[], Any]]] = [
        ("memory", InMemoryMemoryStore),
        ("sqlite", lambda: SqliteMemoryStore(folder / f"s{next(counter)}.db")),
    ]
    if postgres:
        try:
            import psycopg

            from recallstore.backends.postgres import PostgresMemoryStore

            with psycopg.connect(postgres, connect_timeout=3):
                pass
        except Exception as exc:  # the benchmark reports and carries on without Postgres
            print(f"postgres skipped: {exc}")
        else:
            makers.append(
                (
                    "postgres",
                    lambda: PostgresMemoryStore(postgres, schema=f"cap_{uuid.uuid4().hex[:12]}"),
                )
            )
    return makers


def drop_schemas(postgres: str) -> None:
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as conn:
        names = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'cap\\_%'"
        ).fetchall()
        for (name,) in names:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


async def run(messages: int, rounds: int, postgres: str) -> None:
    made = conversations(messages)
    batches = await plain_inputs(made)
    records = sum(len(batch) for batch in batches)
    print(f"{messages:,} messages in {len(made)} conversations -> {records:,} records")
    print(
        f"{'backend':<10}{'plain s':>9}{'capture s':>11}{'again s':>9}{'capture/plain':>15}"
        f"{'again/plain':>13}{'added again':>13}"
    )
    with tempfile.TemporaryDirectory(prefix="recallstore-capture-") as tmp:
        try:
            for name, make in store_makers(Path(tmp), postgres):
                plain, first, again, ratios, again_ratios = [], [], [], [], []
                added = 0
                for _ in range(rounds):
                    p = await timed_plain(make(), batches)
                    c, a, added = await timed_capture(make(), made)
                    plain.append(p)
                    first.append(c)
                    again.append(a)
                    ratios.append(c / p)
                    again_ratios.append(a / p)
                print(
                    f"{name:<10}{statistics.median(plain):>9.2f}{statistics.median(first):>11.2f}"
                    f"{statistics.median(again):>9.2f}{statistics.median(ratios):>14.2f}x"
                    f"{statistics.median(again_ratios):>12.2f}x{added:>13}"
                )
        finally:
            if postgres:
                try:
                    drop_schemas(postgres)
                except Exception as exc:  # nothing to drop when the server is unreachable
                    print(f"(schemas not dropped: {exc})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--postgres", default=DEFAULT_POSTGRES, help="server URL; an empty string skips Postgres"
    )
    args = parser.parse_args(argv)
    asyncio.run(run(args.messages, args.rounds, args.postgres))
    return 0


if __name__ == "__main__":
    sys.exit(main())
