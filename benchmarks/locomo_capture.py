"""Recall@10 on the LoCoMo dev split with the conversations stored through ``capture``.

Each session of each sample is one transcript (its turns as chat messages: the first
speaker ``user``, the other ``assistant``, each with its ``name`` and the session's date
as the message time) captured with ``recallstore.capture`` in the scope
``{"sample": id}``, conversation ``"<sample>/<session>"``. The questions and the
scoring are ``locomo_recall.py``'s: the turn a hit is (its payload's conversation and
message index) against the question's evidence. The per-turn writes of
``locomo_recall.py`` run beside it on the same backend in the same run, and then the
whole split is captured a second time, which must add no record.

    .venv/bin/python benchmarks/locomo_capture.py [--data PATH] [--limit 10]
        [--postgres postgresql://postgres@127.0.0.1:5432/test | --postgres '']

Skips cleanly (exit 0) when the data file is absent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from locomo_recall import (
    DEFAULT_DATA,
    DEFAULT_POSTGRES,
    Question,
    Result,
    load_locomo,
    measure,
    print_table,
)

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.capture import capture
from recallstore.jsonl import iter_records
from recallstore.records import MemorySearchQuery
from recallstore.store import MemoryStore


@dataclass
class Session:
    sample: str
    key: str
    messages: list[dict[str, Any]]
    dia_ids: list[str]

    @property
    def conversation_id(self) -> str:
        return f"{self.sample}/{self.key}"


def session_date(text: str) -> datetime:
    """LoCoMo's ``"1:56 pm on 8 May, 2023"`` as a UTC time."""
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_sessions(path: Path) -> list[Session]:
    """Every session of every sample as a transcript of chat messages."""
    sessions: list[Session] = []
    for sample in json.loads(path.read_text()):
        conversation = sample["conversation"]
        for key, turns in conversation.items():
            if not key.startswith("session_") or not isinstance(turns, list):
                continue
            date = session_date(conversation[f"{key}_date_time"])
            messages = [
                {
                    "role": "user" if turn["speaker"] == conversation["speaker_a"] else "assistant",
                    "name": turn["speaker"],
                    "content": turn["text"],
                    "time": date,
                }
                for turn in turns
            ]
            dia_ids = [turn["dia_id"] for turn in turns]
            sessions.append(Session(sample["sample_id"], key, messages, dia_ids))
    return sessions


async def capture_all(store: MemoryStore, sessions: list[Session]) -> int:
    """Capture every session; how many records the calls added."""
    added = 0
    for session in sessions:
        result = await capture(
            store,
            {"sample": session.sample},
            session.messages,
            conversation_id=session.conversation_id,
        )
        added += result.added
    return added


async def count(store: MemoryStore) -> int:
    return sum([1 async for _ in iter_records(store)])


@dataclass
class Captured:
    result: Result
    records: int
    second_added: int
    records_after: int


async def measure_capture(
    name: str, store: MemoryStore, sessions: list[Session], questions: list[Question], limit: int
) -> Captured:
    result = Result(f"{name} capture")
    turn_of = {
        (session.conversation_id, index): dia_id
        for session in sessions
        for index, dia_id in enumerate(session.dia_ids)
    }
    async with store:
        started = time.perf_counter()
        await capture_all(store, sessions)
        result.write_seconds = time.perf_counter() - started
        started = time.perf_counter()
        for question in questions:
            hits = await store.search(
                MemorySearchQuery(
                    query=question.text, scope={"sample": question.sample}, limit=limit
                )
            )
            found = {
                turn_of[(payload["conversation_id"], payload["message"])]
                for hit in hits
                if isinstance(payload := hit.record.payload, dict)
            }
            recall = len(found & question.evidence) / len(question.evidence)
            result.recall_by_category[question.category].append(recall)
        result.search_seconds = time.perf_counter() - started
        records = await count(store)
        second_added = await capture_all(store, sessions)
        return Captured(result, records, second_added, await count(store))


StoreFactory = Callable[[], Any]


@asynccontextmanager
async def backends(postgres: str) -> AsyncIterator[list[tuple[str, StoreFactory]]]:
    """``(name, make a fresh store)`` for each backend; Postgres schemas dropped after."""
    schemas: list[str] = []
    with tempfile.TemporaryDirectory(prefix="recallstore-locomo-") as tmp:
        made = iter(range(1_000))

        def sqlite() -> MemoryStore:
            return SqliteMemoryStore(Path(tmp) / f"memory-{next(made)}.db")

        # SQLite first: print_table compares every row with the first one.
        found: list[tuple[str, StoreFactory]] = [
            ("sqlite", sqlite),
            ("memory", InMemoryMemoryStore),
        ]
        psycopg: Any = None
        if postgres:
            try:
                import psycopg

                from recallstore.backends.postgres import PostgresMemoryStore

                def postgres_store() -> MemoryStore:
                    schemas.append(f"locomo_{uuid.uuid4().hex[:12]}")
                    return PostgresMemoryStore(postgres, schema=schemas[-1])

                async with await psycopg.AsyncConnection.connect(postgres, connect_timeout=3):
                    found.append(("postgres", postgres_store))
            except Exception as exc:  # the benchmark reports and carries on without Postgres
                print(f"postgres skipped: {exc}")
        try:
            yield found
        finally:
            if schemas and psycopg is not None:
                async with await psycopg.AsyncConnection.connect(postgres, autocommit=True) as conn:
                    for schema in schemas:
                        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


async def run(data: Path, limit: int, postgres: str) -> tuple[list[Result], list[str]]:
    inputs, questions, _ = load_locomo(data)
    sessions = load_sessions(data)
    messages = sum(len(session.messages) for session in sessions)
    print(
        f"LoCoMo {data.name}: {len(sessions)} sessions, {messages} messages captured, "
        f"{len(inputs)} turns written per turn; {len(questions)} questions; recall@{limit}"
    )
    results: list[Result] = []
    notes: list[str] = []
    async with backends(postgres) as made:
        for name, make in made:
            results.append(await measure(f"{name} per-turn", make(), inputs, questions, limit))
            captured = await measure_capture(name, make(), sessions, questions, limit)
            results.append(captured.result)
            notes.append(
                f"{name}: capture stored {captured.records} records; capturing the split again "
                f"added {captured.second_added} (records after: {captured.records_after})"
            )
    return results, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument(
        "--postgres", default=DEFAULT_POSTGRES, help="server URL; an empty string skips Postgres"
    )
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"skipped: LoCoMo data not found at {args.data}")
        return 0
    results, notes = asyncio.run(run(args.data, args.limit, args.postgres))
    print_table(results, args.limit)
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
