"""What reaches the agent: the turn-1 recall block on LongMemEval and LoCoMo dev data.

Search can rank the answer first and the block still drop it. This measures the block
itself, through the public API: each question's history is written into a fresh
in-memory store (keyword-only, and with the default embedder), then
``MemoryCapability.instantiate(scope, conversation_id=..., first_user_text=question)``
builds the recall, and the block is checked for the answer:

* LongMemEval (``longmemeval-dev/``: one file per question): every user turn of every
  haystack session is one memory (``observed_at`` its session's date, the session id in
  the payload). ``in block``: the fraction of questions whose every answer session has a
  turn in the block; ``R_all@5``: the fraction whose every answer session is among the
  first 5 sessions of ``search(question)`` (sessions ranked by their best turn).
* LoCoMo (``locomo-dev.json``): every dialogue turn is one memory ("Speaker: text", its
  session's date as ``observed_at``); ``in block``: the fraction of questions (categories
  1-4) whose every evidence turn is in the block; ``R@10``: evidence turns among the
  first 10 hits, averaged.

For each budget it prints also the mean block size (characters), entries and the share
of truncated blocks, and the same on the questions that have no answer (LongMemEval's
``_abs`` ids, LoCoMo's adversarial category 5): there a good block is small.
``--curve`` adds answer-in-block for budgets from 1,000 to 8,000 characters.

    .venv/bin/python benchmarks/recall_block.py [--budgets 2000] [--curve]
        [--embedders keyword,default] [--recall-limit 20] [--longmemeval DIR] [--locomo FILE]

Keyword search alone by default (about 4 minutes, what ``make bench`` runs);
``--embedders keyword,default --curve`` is what docs/benchmarks.md shows.

The data is read from ``../shared/data`` at run time, never copied into the project;
it skips cleanly (exit 0) when it is absent, and skips the default embedder when the
``semantic`` extra is missing. One in-memory store per history: the three backends
rank alike (``locomo_recall.py`` checks), so the block is the same on each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _models import CachedEmbedder, missing_packages

from recallstore import MemoryCapability, MemorySearchQuery, MemoryWriteInput
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.embedding import default_embedder
from recallstore.recall import DEFAULT_BUDGET_CHARS, DEFAULT_RECALL_LIMIT
from recallstore.records import MAX_CONTENT_CHARS

# ``../shared/data`` beside the checkout (or beside its worktree folder), where it is kept.
DATA = next(
    (
        folder / "shared" / "data"
        for folder in Path(__file__).resolve().parents
        if (folder / "shared" / "data").is_dir()
    ),
    Path("../shared/data"),
)
DEFAULT_LONGMEMEVAL = DATA / "longmemeval-dev"
DEFAULT_LOCOMO = DATA / "locomo-dev.json"
CURVE = (1_000, 1_500, 2_000, 3_000, 4_000, 5_000, 6_000, 8_000)
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_SCOPE_FIELD = "user"


@dataclass
class Case:
    """One question over one history: the memories, and what the block must hold."""

    scope: str
    question: str
    kind: str
    answers: frozenset[str]
    """Session ids (LongMemEval) or dialogue ids (LoCoMo) the answer needs; empty: none."""
    abstain: bool


@dataclass
class Tally:
    in_block: list[bool] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    entries: list[int] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)
    abstain_sizes: list[int] = field(default_factory=list)
    abstain_entries: list[int] = field(default_factory=list)
    by_kind: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _date(text: str) -> datetime:
    """LongMemEval's ``2023/05/20 (Sat) 02:21`` or LoCoMo's ``1:56 pm on 8 May, 2023``."""
    for pattern in ("%Y/%m/%d (%a) %H:%M", "%I:%M %p on %d %B, %Y"):
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unknown date format: {text!r}")


def longmemeval(folder: Path) -> list[tuple[Case, list[MemoryWriteInput]]]:
    """Each question with its history's user turns as write inputs."""
    cases = []
    for path in sorted(folder.glob("*.json")):
        item: dict[str, Any] = json.loads(path.read_text())
        scope = {_SCOPE_FIELD: item["question_id"]}
        inputs = [
            MemoryWriteInput(
                scope=scope,
                kind="episode",
                content=turn["content"][:MAX_CONTENT_CHARS],
                observed_at=_date(day),
                payload={"session": session_id},
            )
            for session_id, day, session in zip(
                item["haystack_session_ids"],
                item["haystack_dates"],
                item["haystack_sessions"],
                strict=True,
            )
            for turn in session
            if turn["role"] == "user" and turn["content"].strip()
        ]
        abstain = item["question_id"].endswith("_abs")
        answers = frozenset(() if abstain else item["answer_session_ids"])
        cases.append(
            (
                Case(
                    item["question_id"], item["question"], item["question_type"], answers, abstain
                ),
                inputs,
            )
        )
    return cases


def locomo(path: Path) -> list[tuple[list[Case], list[MemoryWriteInput]]]:
    """Each conversation's questions with its turns as write inputs."""
    groups = []
    for sample in json.loads(path.read_text()):
        scope = {_SCOPE_FIELD: sample["sample_id"]}
        conversation = sample["conversation"]
        inputs = []
        for key, turns in conversation.items():
            if not key.startswith("session_") or not isinstance(turns, list):
                continue
            day = _date(conversation[f"{key}_date_time"])
            inputs += [
                MemoryWriteInput(
                    scope=scope,
                    kind="episode",
                    content=f"{turn['speaker']}: {turn['text']}",
                    observed_at=day,
                    payload={"session": turn["dia_id"]},
                )
                for turn in turns
            ]
        known = {_session(memory.payload) for memory in inputs}
        cases = []
        for qa in sample["qa"]:
            ids = {f"D{a}:{b}" for raw in qa.get("evidence", []) for a, b in _EVIDENCE.findall(raw)}
            abstain = qa["category"] == 5
            ids &= known
            if abstain or ids:
                answers = frozenset() if abstain else frozenset(ids)
                cases.append(
                    Case(sample["sample_id"], qa["question"], str(qa["category"]), answers, abstain)
                )
        groups.append((cases, inputs))
    return groups


def _session(payload: object) -> str:
    return str(payload["session"]) if isinstance(payload, dict) else ""


async def measure(
    groups: list[tuple[list[Case], list[MemoryWriteInput]]],
    embedder: CachedEmbedder | None,
    budgets: Sequence[int],
    search_depth: int,
    sessions_ranked: bool,
    limit: int = DEFAULT_RECALL_LIMIT,
) -> tuple[dict[int, Tally], list[bool], dict[str, list[bool]]]:
    """Tallies per budget, and search's recall per answerable question (and by kind)."""
    tallies = {budget: Tally() for budget in budgets}
    found: list[bool] = []
    found_by_kind: dict[str, list[bool]] = defaultdict(list)
    for cases, inputs in groups:
        store = InMemoryMemoryStore(embedder=embedder)
        async with store:
            for offset in range(0, len(inputs), 500):
                await store.write(inputs[offset : offset + 500])
            capabilities = {
                budget: MemoryCapability(
                    store, scope_fields=(_SCOPE_FIELD,), budget_chars=budget, recall_limit=limit
                )
                for budget in budgets
            }
            for case in cases:
                scope = {_SCOPE_FIELD: case.scope}
                if case.answers:
                    hits = await store.search(
                        MemorySearchQuery(query=case.question, scope=scope, limit=search_depth)
                    )
                    ranked = list(dict.fromkeys(_session(hit.record.payload) for hit in hits))
                    top = set(ranked[:5]) if sessions_ranked else set(ranked[:search_depth])
                    score = (
                        float(case.answers <= top)
                        if sessions_ranked
                        else len(case.answers & top) / len(case.answers)
                    )
                    found.append(bool(score) if sessions_ranked else score)  # type: ignore[arg-type]
                    found_by_kind[case.kind].append(score)  # type: ignore[arg-type]
                for budget, capability in capabilities.items():
                    instance = await capability.instantiate(
                        scope, conversation_id="bench", first_user_text=case.question
                    )
                    tally = tallies[budget]
                    size = len(instance.recall_block or "")
                    entries = len(instance.recall.entries)
                    if case.abstain:
                        tally.abstain_sizes.append(size)
                        tally.abstain_entries.append(entries)
                        continue
                    shown = {_session(record.payload) for record in instance.recall.entries}
                    tally.in_block.append(case.answers <= shown)
                    tally.by_kind[case.kind].append(case.answers <= shown)
                    tally.sizes.append(size)
                    tally.entries.append(entries)
                    tally.truncated.append(instance.recall.truncated)
    return tallies, found, found_by_kind


def report(
    name: str,
    label: str,
    tallies: dict[int, Tally],
    found: list[bool],
    found_by_kind: dict[str, list[bool]],
    search_name: str,
) -> None:
    answerable = len(found)
    print(
        f"\n{name} ({label}): {answerable} answerable questions; {search_name} = {_mean(found):.3f}"
    )
    print("  budget  in block  chars  entries  truncated | no answer: n  chars  entries")
    for budget, tally in tallies.items():
        print(
            f"  {budget:>6}  {_mean(tally.in_block):>8.3f}  {_mean(tally.sizes):>5.0f}"
            f"  {_mean(tally.entries):>7.1f}  {_mean(tally.truncated):>9.2f} |"
            f" {len(tally.abstain_sizes):>12}  {_mean(tally.abstain_sizes):>5.0f}"
            f"  {_mean(tally.abstain_entries):>7.1f}"
        )
    first = next(iter(tallies.values()))
    kinds = sorted(first.by_kind)
    print(
        "  by question type (in block at budgets " + ", ".join(map(str, tallies)) + f"; "
        f"{search_name}):"
    )
    for kind in kinds:
        cells = "  ".join(f"{_mean(t.by_kind[kind]):.3f}" for t in tallies.values())
        print(
            f"    {kind:<28} n={len(first.by_kind[kind]):>3}  {cells}  |"
            f" {_mean(found_by_kind[kind]):.3f}"
        )


async def run(args: argparse.Namespace) -> None:
    budgets = sorted({*args.budgets, *(CURVE if args.curve else ())})
    datasets: list[tuple[str, list[tuple[list[Case], list[MemoryWriteInput]]], bool, str]] = []
    if args.longmemeval.is_dir():
        cases = [([case], inputs) for case, inputs in longmemeval(args.longmemeval)]
        datasets.append(("LongMemEval dev", cases, True, "search R_all@5"))
    else:
        print(f"skipped LongMemEval: no data at {args.longmemeval}")
    if args.locomo.is_file():
        datasets.append(("LoCoMo dev", locomo(args.locomo), False, "search R@10"))
    else:
        print(f"skipped LoCoMo: no data at {args.locomo}")
    cached: CachedEmbedder | None = None
    for label in args.embedders:
        if label == "default":
            if missing_packages("default"):
                print(f"skipped the default embedder: missing {missing_packages('default')}")
                continue
            cached = cached or CachedEmbedder(default_embedder())
        embedder = cached if label == "default" else None
        for name, groups, sessions_ranked, search_name in datasets:
            started = time.perf_counter()
            depth = 50 if sessions_ranked else 10
            tallies, found, by_kind = await measure(
                groups, embedder, budgets, depth, sessions_ranked, args.recall_limit
            )
            report(name, label, tallies, found, by_kind, search_name)
            print(f"  ({time.perf_counter() - started:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--longmemeval", type=Path, default=DEFAULT_LONGMEMEVAL)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument(
        "--budgets",
        type=lambda text: [int(part) for part in text.split(",")],
        default=sorted({DEFAULT_BUDGET_CHARS, 2_000}),
        help="comma-separated budgets in characters (default: the default and 2,000)",
    )
    parser.add_argument("--curve", action="store_true", help="budgets 1,000-8,000 as well")
    parser.add_argument(
        "--recall-limit",
        type=int,
        default=DEFAULT_RECALL_LIMIT,
        help="search hits the recall fetches (MemoryCapability's recall_limit)",
    )
    parser.add_argument(
        "--embedders",
        type=lambda text: text.split(","),
        default=["keyword"],
        help="keyword and/or default (the default embedder: about 8 minutes more)",
    )
    args = parser.parse_args(argv)
    if not args.longmemeval.is_dir() and not args.locomo.is_file():
        print(f"skipped: no dev data under {DATA}")
        return 0
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
