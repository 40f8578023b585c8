"""Paraphrased first messages among distractors: is the memory in the turn-1 block?

The paraphrase suite of the tests (``tests/hybrid/_paraphrases.py``: 36 memories, each
with a later first message that shares no searchable word with it) passes in a store
holding the suite alone. Issue 37 measures the same on pairs among 150 distractors.
This puts each pair's memory, alone, among ``N`` distractors in one user's scope (an
in-memory store; the three backends rank alike) and opens a conversation with its first
message through ``MemoryCapability.instantiate``, default budget and recall limit, the
profile listing off as in the test (``profile_limit=0``: it would hand a profile memory
over without any search). Reported per distractor count: the pairs whose memory is in
the block, and its place among the search's hits (first, in the first 5, in the first
10, in the first 20, the recall's limit), keyword-only beside the default embedder.

Distractors: user turns of the LongMemEval dev histories (``../shared/data``, read at
run time) of 20 to 400 characters, memory-sized statements of people's lives, drawn
with a fixed seed; their embeddings are made once per run.

    .venv/bin/python benchmarks/paraphrase_block.py [--distractors 150 1000] [--longmemeval DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from _models import CachedEmbedder, missing_packages
from recall_block import DEFAULT_LONGMEMEVAL

from recallstore import MemoryCapability, MemorySearchQuery, MemoryWriteInput
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.embedding import Embedder, default_embedder

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' suite, one copy
from tests.hybrid._paraphrases import PARAPHRASES, Paraphrase

SCOPE = {"tenant": "acme", "user": "ana"}
PLACES = (1, 5, 10, 20)


def distractors(folder: Path, count: int, seed: int = 37) -> list[str]:
    """``count`` distinct user turns of 20-400 characters from the histories in ``folder``."""
    turns: set[str] = set()
    for path in sorted(folder.glob("*.json")):
        for session in json.loads(path.read_text())["haystack_sessions"]:
            for turn in session:
                text = " ".join(turn["content"].split())
                if turn["role"] == "user" and 20 <= len(text) <= 400:
                    turns.add(text)
    pool = sorted(turns)
    if len(pool) < count:
        raise SystemExit(f"only {len(pool)} distractors in {folder}, asked for {count}")
    return random.Random(seed).sample(pool, count)


async def place_and_block(
    pair: Paraphrase, others: Sequence[str], embedder: Embedder | None
) -> tuple[int | None, bool]:
    """The memory's place among the first message's hits (None: not among them) and
    whether the conversation's recall block holds it."""
    store = InMemoryMemoryStore(embedder=embedder)
    async with store:
        inputs = [MemoryWriteInput(scope=SCOPE, kind="fact", content=text) for text in others]
        inputs.append(MemoryWriteInput(scope=SCOPE, kind=pair.kind, content=pair.memory))
        await store.write(inputs)
        capability = MemoryCapability(store, scope_fields=("tenant", "user"), profile_limit=0)
        memory = await capability.instantiate(
            SCOPE, conversation_id="c", first_user_text=pair.first_message
        )
        in_block = memory.recall_block is not None and pair.memory in memory.recall_block
        hits = await store.search(
            MemorySearchQuery(query=pair.first_message, scope=SCOPE, limit=max(PLACES))
        )
        contents = [hit.record.content for hit in hits]
        place = contents.index(pair.memory) + 1 if pair.memory in contents else None
        return place, in_block


async def run(folder: Path, counts: Sequence[int]) -> None:
    embedders: dict[str, Embedder | None] = {"keyword": None}
    if missing_packages("default"):
        print("the default embedder is not installed (the semantic extra): keyword only")
    else:
        embedders["default"] = CachedEmbedder(default_embedder())
    print(f"{len(PARAPHRASES)} pairs, each memory alone among the distractors")
    header = "  ".join(f"{'first ' + str(n) if n > 1 else 'first':>8s}" for n in PLACES)
    print(f"{'distractors':>11s} {'embedder':>8s} {'in block':>9s}  {header}  {'s':>5s}")
    for count in counts:
        others = distractors(folder, count)
        for name, embedder in embedders.items():
            started = time.perf_counter()
            results = [await place_and_block(pair, others, embedder) for pair in PARAPHRASES]
            in_block = sum(found for _, found in results)
            places = "  ".join(
                f"{sum(1 for place, _ in results if place is not None and place <= n):8d}"
                for n in PLACES
            )
            print(
                f"{count:11,d} {name:>8s} {in_block:5d}/{len(results)}  {places}"
                f"  {time.perf_counter() - started:5.0f}",
                flush=True,
            )
            missed = [
                pair.first_message
                for (_, found), pair in zip(results, PARAPHRASES, strict=True)
                if not found
            ]
            if name != "keyword" and missed:
                print(f"{'':>11s} not in the block: {'; '.join(missed)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distractors", type=int, nargs="+", default=[150, 1000])
    parser.add_argument("--longmemeval", type=Path, default=DEFAULT_LONGMEMEVAL)
    args = parser.parse_args(argv)
    if not args.longmemeval.is_dir():
        print(f"skipped: LongMemEval dev data not found at {args.longmemeval}")
        return 0
    asyncio.run(run(args.longmemeval, args.distractors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
