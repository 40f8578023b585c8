"""Time in retrieval, measured: LoCoMo with each session's date as observed_at, and a
diary whose questions name relative times (``benchmarks/_diary.py``).

Three ways to answer a question, on the same stores:

* ``plain`` — ``search(question)``, as before issue 26;
* ``filter`` — the question's time phrase (``recallstore._when.find_phrase``) read as a
  window at the clock, the rest of the question searched only inside it;
* ``boost`` — ``recallstore._time_query.time_boosted_search``: matches inside the window
  first, the plain search's after them (what memory_search and recall do).

LoCoMo: every turn is a memory written with its session's date as ``observed_at``
(``--no-observed`` writes without, as ``locomo_recall.py`` does); recall@10 over
categories 1-4. Its questions' times are relative to the conversations (2023), not to
the host's clock, which is what a store meets in the wild: phrases it must not trust.
The diary: recall@10 over its questions, read at the diary's own "now".

LongMemEval (``--longmemeval``, the dev slice under ``../shared/data``): every user turn
of a question's history is a memory with its session's date as ``observed_at``, and the
question is asked at its own date (``question_date``) as "now". Per question type,
``recall_all@5`` (every answer session among the first 5 sessions, ranked by their best
turn in the first 50 hits) with the phrase ignored (``plain``) and read (``boost``:
``time_boosted_search``, what recall and ``memory_search`` do), keyword search alone
and with the default embedder (``--embedders``). Reading a phrase must never lower a
type's figure.

    .venv/bin/python benchmarks/time_recall.py [--data PATH] [--backends sqlite,memory]
        [--longmemeval DIR] [--embedders keyword,default]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from _diary import NOW as DIARY_NOW
from _diary import SCOPE as DIARY_SCOPE
from _diary import diary
from locomo_recall import DEFAULT_DATA, load_locomo
from recall_block import DEFAULT_LONGMEMEVAL
from recall_block import longmemeval as longmemeval_cases

from recallstore._time_query import query_time, time_boosted_search
from recallstore._when import TimeWindow
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemoryHit, MemorySearchQuery
from recallstore.store import MemoryStore

LIMIT = 10
MODES = ("plain", "filter", "boost")


def _searcher(
    store: MemoryStore, scope: dict[str, str]
) -> Callable[..., Awaitable[list[MemoryHit]]]:
    async def search(text: str, window: TimeWindow, limit: int) -> list[MemoryHit]:
        return await store.search(
            MemorySearchQuery(
                query=text,
                scope=scope,
                limit=limit,
                observed_after=window.start,
                observed_before=window.end,
            )
        )

    return search


async def answer(
    mode: str, store: MemoryStore, scope: dict[str, str], text: str, now: datetime
) -> list[MemoryHit]:
    search = _searcher(store, scope)
    if mode == "plain":
        return await search(text, TimeWindow(None, None), LIMIT)
    if mode == "boost":
        hits, _ = await time_boosted_search(search, text, LIMIT, now)
        return hits
    found = query_time(text, now)
    if found is None or not found.rest.strip():
        return await search(text, TimeWindow(None, None), LIMIT)
    return await search(found.rest, found.window, LIMIT)


def _session_dates(path: Path) -> dict[tuple[str, str], datetime]:
    import json

    dates = {}
    for sample in json.loads(path.read_text()):
        conversation = sample["conversation"]
        for key, value in conversation.items():
            if key.endswith("_date_time"):
                session = key.removesuffix("_date_time")
                moment = datetime.strptime(value, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
                dates[(sample["sample_id"], session)] = moment
                for turn in conversation.get(session, []):
                    dates[(sample["sample_id"], turn["dia_id"])] = moment
    return dates


def _stores(backends: list[str], tmp: Path) -> list[tuple[str, MemoryStore]]:
    made: list[tuple[str, MemoryStore]] = []
    for name in backends:
        if name == "sqlite":
            made.append((name, SqliteMemoryStore(tmp / f"{len(made)}.db")))
        else:
            made.append((name, InMemoryMemoryStore(clock=lambda: datetime.now(UTC))))
    return made


async def locomo(data: Path, backends: list[str], observed: bool) -> list[list[str]]:
    inputs, questions, _ = load_locomo(data)
    dates = _session_dates(data)
    if observed:
        inputs = [
            inp.model_copy(
                update={"observed_at": dates[(inp.scope["sample"], inp.payload["dia_id"])]}
            )
            for inp in inputs
        ]
    now = datetime.now(UTC)
    rows = []
    with tempfile.TemporaryDirectory(prefix="recallstore-time-") as tmp:
        for name, store in _stores(backends, Path(tmp)):
            async with store:
                for offset in range(0, len(inputs), 200):
                    await store.write(inputs[offset : offset + 200])
                asked = [q for q in questions if q.category != 5]
                with_phrase = sum(query_time(q.text, now) is not None for q in asked)
                row = [
                    f"locomo {name}{'' if observed else ' (no observed_at)'}",
                    str(len(asked)),
                    str(with_phrase),
                ]
                for mode in MODES:
                    total = 0.0
                    for question in asked:
                        hits = await answer(
                            mode, store, {"sample": question.sample}, question.text, now
                        )
                        found = {
                            h.record.payload["dia_id"]
                            for h in hits
                            if isinstance(h.record.payload, dict)
                        }
                        total += len(found & question.evidence) / len(question.evidence)
                    row.append(f"{total / len(asked):.3f}")
                rows.append(row)
    return rows


async def diary_suite(backends: list[str]) -> list[list[str]]:
    notes, questions = diary()
    rows = []
    with tempfile.TemporaryDirectory(prefix="recallstore-diary-") as tmp:
        for name, store in _stores(backends, Path(tmp)):
            async with store:
                written = await store.write(notes)
                index_of = {record.id: index for index, record in enumerate(written)}
                row = [f"diary {name}", str(len(questions)), str(len(questions))]
                for mode in MODES:
                    total = 0.0
                    for question in questions:
                        hits = await answer(mode, store, DIARY_SCOPE, question.text, DIARY_NOW)
                        found = {index_of[hit.record.id] for hit in hits}
                        total += len(found & question.evidence) / len(question.evidence)
                    row.append(f"{total / len(questions):.3f}")
                rows.append(row)
    return rows


LONGMEMEVAL_DEPTH = 50
"""Hits fetched per LongMemEval question; sessions are ranked by their best turn."""


def _question_dates(folder: Path) -> dict[str, datetime]:
    import json

    dates = {}
    for path in sorted(folder.glob("*.json")):
        item = json.loads(path.read_text())
        moment = datetime.strptime(item["question_date"], "%Y/%m/%d (%a) %H:%M")
        dates[item["question_id"]] = moment.replace(tzinfo=UTC)
    return dates


async def longmemeval_suite(folder: Path, embedders: list[str]) -> list[list[str]]:
    """Per question type and embedder: questions, with a phrase, recall_all@5 plain and
    read (the phrase read at the question's date)."""
    from _models import CachedEmbedder, missing_packages

    from recallstore.embedding import default_embedder

    cases = [(case, inputs) for case, inputs in longmemeval_cases(folder) if case.answers]
    nows = _question_dates(folder)
    rows = []
    for label in embedders:
        embedder = None
        if label == "default":
            if missing_packages("default"):
                print(
                    f"LongMemEval default embedder skipped: missing {missing_packages('default')}"
                )
                continue
            embedder = CachedEmbedder(default_embedder())
        tally: dict[str, list[tuple[bool, bool, bool]]] = {}
        for case, inputs in cases:
            now = nows[case.scope]
            store = InMemoryMemoryStore(embedder=embedder)
            async with store:
                for offset in range(0, len(inputs), 500):
                    await store.write(inputs[offset : offset + 500])
                search = _searcher(store, {"user": case.scope})
                plain = await search(case.question, TimeWindow(None, None), LONGMEMEVAL_DEPTH)
                read, found = await time_boosted_search(
                    search, case.question, LONGMEMEVAL_DEPTH, now
                )
            scores = tuple(
                case.answers <= set(list(dict.fromkeys(_session(h) for h in hits))[:5])
                for hits in (plain, read)
            )
            tally.setdefault(case.kind, []).append((found is not None, *scores))
        for kind in [*sorted(tally), "all"]:
            results = [r for k in sorted(tally) for r in tally[k]] if kind == "all" else tally[kind]
            rows.append(
                [
                    f"longmemeval {label}: {kind}",
                    str(len(results)),
                    str(sum(r[0] for r in results)),
                    f"{sum(r[1] for r in results) / len(results):.3f}",
                    f"{sum(r[2] for r in results) / len(results):.3f}",
                ]
            )
    return rows


def _session(hit: MemoryHit) -> str:
    payload = hit.record.payload
    return str(payload["session"]) if isinstance(payload, dict) else ""


def _print(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    for line in [headers, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths, strict=True)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--backends", default="sqlite,memory")
    parser.add_argument("--no-observed", action="store_true")
    parser.add_argument("--longmemeval", type=Path, default=DEFAULT_LONGMEMEVAL)
    parser.add_argument(
        "--embedders",
        default="keyword,default",
        help="for LongMemEval: keyword and/or default (the default embedder)",
    )
    parser.add_argument("--only-longmemeval", action="store_true", help="skip the diary and LoCoMo")
    args = parser.parse_args(argv)
    if args.longmemeval.is_dir():
        embedders = [name.strip() for name in args.embedders.split(",") if name.strip()]
        _print(
            ["LongMemEval dev", "questions", "with a time phrase", "R_all@5 plain", "R_all@5 read"],
            asyncio.run(longmemeval_suite(args.longmemeval, embedders)),
        )
    else:
        print(f"LongMemEval skipped: {args.longmemeval} not found")
    if args.only_longmemeval:
        return 0
    backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    rows = asyncio.run(diary_suite(backends))
    if args.data.exists():
        rows += asyncio.run(locomo(args.data, backends, observed=not args.no_observed))
        if not args.no_observed:
            rows += asyncio.run(locomo(args.data, backends[:1], observed=False))
    else:
        print(f"LoCoMo skipped: {args.data} not found")
    headers = ["suite", "questions", "with a time phrase", *(f"R@{LIMIT} {mode}" for mode in MODES)]
    _print(headers, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
