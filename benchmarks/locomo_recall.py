"""Recall@10 on the LoCoMo dev split, measured through the stores themselves.

Every dialogue turn becomes one memory ("Speaker: text", scope {"sample": id},
dia_id in the payload). Every question with evidence is asked with
``search(question, scope, limit=10)``; recall@10 is the fraction of its evidence
turns among the hits, averaged over questions. The three bundled backends run side
by side (Postgres in a throw-away schema, skipped when the server is unreachable), so
their shared ranking can be compared on the same questions.

    .venv/bin/python benchmarks/locomo_recall.py [--data PATH] [--limit 10]
        [--postgres postgresql://postgres@127.0.0.1:5432/test | --postgres '']

Skips cleanly (exit 0) when the data file is absent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.store import MemoryStore

DEFAULT_DATA = Path("/work/shared/data/locomo-dev.json")
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


@dataclass
class Question:
    sample: str
    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Result:
    name: str
    recall_by_category: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    write_seconds: float = 0.0
    search_seconds: float = 0.0
    search_times: list[float] = field(default_factory=list)

    def recall(self, categories: set[int] | None = None) -> float:
        values = [
            value
            for category, scores in self.recall_by_category.items()
            if categories is None or category in categories
            for value in scores
        ]
        return sum(values) / len(values) if values else float("nan")


def load_locomo(path: Path) -> tuple[list[MemoryWriteInput], list[Question], int]:
    """The turns as write inputs, the answerable questions, and the evidence ids dropped."""
    samples: list[dict[str, Any]] = json.loads(path.read_text())
    inputs: list[MemoryWriteInput] = []
    questions: list[Question] = []
    dropped = 0
    for sample in samples:
        sample_id = sample["sample_id"]
        known: set[str] = set()
        for key, turns in sample["conversation"].items():
            if not key.startswith("session_") or not isinstance(turns, list):
                continue
            for turn in turns:
                known.add(turn["dia_id"])
                inputs.append(
                    MemoryWriteInput(
                        scope={"sample": sample_id},
                        kind="episode",
                        content=f"{turn['speaker']}: {turn['text']}",
                        payload={"dia_id": turn["dia_id"]},
                    )
                )
        for qa in sample["qa"]:
            # Evidence ids are sometimes joined ("D8:6; D9:17") or misspelt ("D:11:26").
            ids = {f"D{a}:{b}" for raw in qa.get("evidence", []) for a, b in _EVIDENCE.findall(raw)}
            dropped += len(ids - known)
            ids &= known
            if ids:
                questions.append(
                    Question(sample_id, qa["question"], qa["category"], frozenset(ids))
                )
    return inputs, questions, dropped


async def measure(
    name: str,
    store: MemoryStore,
    inputs: list[MemoryWriteInput],
    questions: list[Question],
    limit: int,
) -> Result:
    result = Result(name)
    async with store:
        started = time.perf_counter()
        for offset in range(0, len(inputs), 200):
            await store.write(inputs[offset : offset + 200])
        result.write_seconds = time.perf_counter() - started
        started = time.perf_counter()
        for question in questions:
            asked_at = time.perf_counter()
            hits = await store.search(
                MemorySearchQuery(
                    query=question.text, scope={"sample": question.sample}, limit=limit
                )
            )
            result.search_times.append(time.perf_counter() - asked_at)
            found = {
                hit.record.payload["dia_id"] for hit in hits if isinstance(hit.record.payload, dict)
            }
            recall = len(found & question.evidence) / len(question.evidence)
            result.recall_by_category[question.category].append(recall)
        result.search_seconds = time.perf_counter() - started
    return result


async def run(data: Path, limit: int, postgres: str) -> list[Result]:
    inputs, questions, dropped = load_locomo(data)
    print(
        f"LoCoMo {data.name}: {len(inputs)} turns, {len(questions)} questions with evidence"
        f" ({dropped} evidence ids not in their conversation were dropped); recall@{limit}"
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="recallstore-locomo-") as tmp:
        store = SqliteMemoryStore(Path(tmp) / "memory.db")
        results.append(await measure("sqlite", store, inputs, questions, limit))
    results.append(await measure("memory", InMemoryMemoryStore(), inputs, questions, limit))
    if postgres:
        result = await measure_postgres(postgres, inputs, questions, limit)
        if result is not None:
            results.append(result)
    return results


async def measure_postgres(
    dsn: str, inputs: list[MemoryWriteInput], questions: list[Question], limit: int
) -> Result | None:
    """The Postgres store's result, in a schema dropped afterwards; None (with a note)
    when the extra is missing or the server is unreachable."""
    try:
        import psycopg

        from recallstore.backends.postgres import PostgresMemoryStore
    except ImportError:
        print("postgres skipped: pip install 'recallstore[postgres]'")
        return None
    schema = f"locomo_{uuid.uuid4().hex[:12]}"
    try:
        return await measure(
            "postgres", PostgresMemoryStore(dsn, schema=schema), inputs, questions, limit
        )
    except Exception as exc:  # the benchmark reports and carries on without Postgres
        print(f"postgres skipped: {exc}")
        return None
    finally:
        try:
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        except psycopg.Error:
            pass


def print_table(results: list[Result], limit: int) -> None:
    categories = sorted({c for r in results for c in r.recall_by_category})
    headers = ["backend", f"all R@{limit}", "excl. adv."] + [
        f"{c}:{CATEGORY_NAMES.get(c, '?')}" for c in categories
    ]
    headers += ["write s", "search ms/q", "p50 ms"]
    rows = []
    for r in results:
        asked = sum(len(v) for v in r.recall_by_category.values())
        row = [r.name, f"{r.recall():.3f}", f"{r.recall(set(categories) - {5}):.3f}"]
        row += [f"{r.recall({c}):.3f}" for c in categories]
        row += [f"{r.write_seconds:.2f}", f"{1000 * r.search_seconds / max(asked, 1):.2f}"]
        row += [f"{1000 * statistics.median(r.search_times or [0.0]):.2f}"]
        rows.append(row)
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    for line in [headers, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths, strict=True)))
    if 5 in categories:
        base = results[0].recall(set(categories) - {5})
        for r in results[1:]:
            delta = r.recall(set(categories) - {5}) - base
            print(f"{r.name} - sqlite, categories 1-4: {100 * delta:+.1f} points of recall@{limit}")


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
    results = asyncio.run(run(args.data, args.limit, args.postgres))
    print_table(results, args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
