"""Which signal tells a relevant hit from noise? Relevance floors tried on the dev data.

The recall block's relevance floor (``recallstore._search.floor``) should keep
unrelated memories out of the block without losing answers. This measures candidate
floors side by side on the same hits: each question's search hits are fetched once
*before* any floor (``recall_block.py``'s stores and questions, 20 hits, time phrases
boosted as the recall does), then every floor below picks which hits go on to the
block, which is fitted as ``assemble_recall`` fits it. Reported per floor, for each
half of the questions (split by a hash of the question text: choose on one half, read
the other): answer-in-block at 2,000 and 4,000 characters on answerable questions, and
on the questions with no answer (LongMemEval ``_abs``, LoCoMo category 5) the block's
mean size and entries at 4,000.

Signals: the hit's score as a fraction of the best (today's floor), the share of the
question's content words the memory holds (keyword coverage), and, with the default
embedder, the cosine between the question's and the memory's embeddings. The cosine of
*unrelated* text is estimated apart from the dev answers: LoCoMo questions against
LongMemEval turns and the reverse (different people, different histories); its 99th
percentile is the threshold tried.

    .venv/bin/python benchmarks/recall_floor.py [--embedders keyword,default]

About 20 minutes with the default embedder on a busy 2-core machine. Skips cleanly
when the data is absent.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import recall_block as rb
from _models import CachedEmbedder, missing_packages

from recallstore._search.query import document_stems, plan_query
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.embedding import default_embedder
from recallstore.recall import DEFAULT_RECALL_LIMIT, _fit, _hits
from recallstore.records import MemoryRecord, MemorySearchQuery
from recallstore.sameness import statement_key

BUDGETS = (2_000, 4_000)


@dataclass
class Hit:
    record: MemoryRecord
    score: float | None
    coverage: float
    cosine: float | None


@dataclass
class Question:
    dataset: str
    case: rb.Case
    hits: list[Hit]

    @property
    def half(self) -> int:
        return int(hashlib.sha256(self.case.question.encode()).hexdigest(), 16) % 2


Floor = Callable[[list[Hit]], list[Hit]]


def _unit(rows: Sequence[Sequence[float]]) -> np.ndarray:
    matrix = np.asarray(rows, dtype=float)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)  # type: ignore[no-any-return]


async def collect(
    name: str, groups: list[tuple[list[rb.Case], list[rb.MemoryWriteInput]]], embedder: object
) -> list[Question]:
    """Every question's hits before the floor, with their signals."""
    cached = embedder if isinstance(embedder, CachedEmbedder) else None
    questions = []
    for cases, inputs in groups:
        async with InMemoryMemoryStore(embedder=cached) as store:
            for offset in range(0, len(inputs), 500):
                await store.write(inputs[offset : offset + 500])
            for case in cases:
                query = MemorySearchQuery(
                    query=case.question, scope={"user": case.scope}, limit=DEFAULT_RECALL_LIMIT
                )
                found = await _hits(store, query, None, None)
                terms = {term.stem for term in plan_query(case.question)}
                cosines: list[float | None] = [None] * len(found)
                if cached is not None and found:
                    asked = _unit(await cached.embed_queries([case.question]))[0]
                    said = _unit(await cached.embed([hit.record.content for hit in found]))
                    cosines = [float(value) for value in said @ asked]
                hits = [
                    Hit(
                        hit.record,
                        hit.score,
                        len(terms & set(document_stems(hit.record.content))) / max(len(terms), 1),
                        cosine,
                    )
                    for hit, cosine in zip(found, cosines, strict=True)
                ]
                questions.append(Question(name, case, hits))
    return questions


def fraction(value: float, always: int = 3) -> Floor:
    """Today's rule: the best ``always``, then a score at least ``value`` of the best."""

    def floor(hits: list[Hit]) -> list[Hit]:
        # As above_floor: against the best score, which a time-boosted list may not
        # have first.
        scores = [hit.score for hit in hits]
        if not hits or any(score is None for score in scores):
            return hits
        best = max(score for score in scores if score is not None)
        if best <= 0:
            return hits
        return [h for i, h in enumerate(hits) if i < always or (h.score or 0.0) >= value * best]

    return floor


def with_words(high: float, low: float, share: float) -> Floor:
    """A score ``high`` of the best, or ``low`` of it with ``share`` of the words."""
    strong, weak = fraction(high, 1), fraction(low, 1)

    def floor(hits: list[Hit]) -> list[Hit]:
        kept = {id(hit) for hit in strong(hits)}
        kept |= {id(hit) for hit in weak(hits) if hit.coverage >= share}
        return [hit for hit in hits if id(hit) in kept]

    return floor


def with_cosine(low: float, cosine: float) -> Floor:
    """A score ``low`` of the best and (with an embedder) a cosine of ``cosine``."""
    weak = fraction(low, 1)

    def floor(hits: list[Hit]) -> list[Hit]:
        return [
            hit
            for index, hit in enumerate(weak(hits))
            if index == 0 or hit.cosine is None or hit.cosine >= cosine
        ]

    return floor


def wordless_cosine(cosine: float) -> Floor:
    """Today's rule, then a hit that shares no word with the question (found by meaning
    alone) needs a cosine of ``cosine``: above what unrelated texts reach."""
    today = fraction(0.10)

    def floor(hits: list[Hit]) -> list[Hit]:
        return [
            hit
            for hit in today(hits)
            if hit.coverage > 0 or hit.cosine is None or hit.cosine >= cosine
        ]

    return floor


def block(question: Question, hits: list[Hit], budget: int) -> tuple[list[MemoryRecord], int]:
    """The block's entries and size, deduplicated and fitted as ``assemble_recall`` does."""
    said: set[str] = set()
    candidates = []
    for hit in hits:
        key = statement_key(hit.record.content)
        if key not in said:
            said.add(key)
            candidates.append((hit.record, False))
    entries, _, _, used, _ = _fit(candidates, budget, question.case.question)
    return entries, used


def report(questions: list[Question], floors: dict[str, Floor], label: str) -> None:
    for dataset in sorted({q.dataset for q in questions}):
        print(f"\n{dataset} ({label}): answer in block at 2,000 / 4,000 | no answer at 4,000")
        for name, floor in floors.items():
            cells = []
            for half in (0, 1):
                chosen = [q for q in questions if q.dataset == dataset and q.half == half]
                found = {budget: [] for budget in BUDGETS}  # type: dict[int, list[bool]]
                sizes, entries = [], []
                for question in chosen:
                    kept = floor(question.hits)
                    for budget in BUDGETS:
                        shown, used = block(question, kept, budget)
                        if question.case.abstain:
                            if budget == BUDGETS[-1]:
                                sizes.append(used)
                                entries.append(len(shown))
                        else:
                            sessions = {rb._session(record.payload) for record in shown}
                            found[budget].append(question.case.answers <= sessions)
                cells.append(
                    f"half {half}: {rb._mean(found[2_000]):.3f} / {rb._mean(found[4_000]):.3f}"
                    f" (n={len(found[4_000])}) | {rb._mean(sizes):>5.0f} ch"
                    f" {rb._mean(entries):>4.1f} e (n={len(sizes)})"
                )
            print(f"  {name:<36} " + "   ".join(cells))


def unrelated_cosines(embedder: CachedEmbedder, questions: list[Question]) -> None:
    """Percentiles of the cosine between questions and other datasets' memories."""
    for asking, holding in (("LoCoMo dev", "LongMemEval dev"), ("LongMemEval dev", "LoCoMo dev")):
        texts = [q.case.question for q in questions if q.dataset == asking]
        held = list(
            dict.fromkeys(
                h.record.content for q in questions if q.dataset == holding for h in q.hits
            )
        )
        if not texts or not held:
            continue
        asked = _unit([embedder.query_cache.get(t, embedder.cache.get(t)) for t in texts])
        said = _unit([embedder.cache[text] for text in held])
        values = (asked @ said.T).ravel()
        cells = ", ".join(f"p{p} {np.percentile(values, p):.3f}" for p in (50, 90, 95, 99, 99.9))
        print(f"  unrelated cosine, {asking} questions x {holding} memories: {cells}")


async def run(args: argparse.Namespace) -> None:
    groups: list[tuple[str, list[tuple[list[rb.Case], list[rb.MemoryWriteInput]]]]] = []
    if args.longmemeval.is_dir():
        groups.append(
            (
                "LongMemEval dev",
                [([case], inputs) for case, inputs in rb.longmemeval(args.longmemeval)],
            )
        )
    if args.locomo.is_file():
        groups.append(("LoCoMo dev", rb.locomo(args.locomo)))
    floors: dict[str, Floor] = {
        "none": lambda hits: hits,
        "fraction 0.10, best 3 (before)": fraction(0.10),
        "fraction 0.15": fraction(0.15, 1),
        "fraction 0.20": fraction(0.20, 1),
        "0.20, or 0.10 with half the words": with_words(0.20, 0.10, 0.5),
        "0.10 and cosine >= 0.28": with_cosine(0.10, 0.28),
        "today, wordless hits need cosine >= 0.28": wordless_cosine(0.28),
        "today, wordless hits need cosine >= 0.22": wordless_cosine(0.22),
        "today, wordless hits need cosine >= 0.19": wordless_cosine(0.19),
    }
    for label in args.embedders:
        embedder: CachedEmbedder | None = None
        if label == "default":
            if missing_packages("default"):
                print(f"skipped the default embedder: missing {missing_packages('default')}")
                continue
            embedder = CachedEmbedder(default_embedder())
        questions = [q for name, data in groups for q in await collect(name, data, embedder)]
        report(questions, floors, label)
        if embedder is not None:
            unrelated_cosines(embedder, questions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--longmemeval", type=rb.Path, default=rb.DEFAULT_LONGMEMEVAL)
    parser.add_argument("--locomo", type=rb.Path, default=rb.DEFAULT_LOCOMO)
    parser.add_argument(
        "--embedders", type=lambda text: text.split(","), default=["keyword", "default"]
    )
    args = parser.parse_args(argv)
    if not args.longmemeval.is_dir() and not args.locomo.is_file():
        print(f"skipped: no dev data under {rb.DATA}")
        return 0
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
