"""LoCoMo recall@10 of hybrid search with a real small model, through the public API.

The same memories and questions as benchmarks/locomo_recall.py (categories 1-4),
through ``SqliteMemoryStore(..., embedder=...).search``, for keyword search alone and
each fusion tried (``recallstore._search.fusion``: the method and the cosine's weight); the
embedder is the benchmark's model, all-mpnet-base-v2, all-MiniLM-L6-v2 with
``--model minilm``, recallstore's default embedder with ``--model default`` (the
``semantic`` extra; ``default-sentences`` embeds long memories by sentence), or
multilingual-e5-small with ``--model e5small`` (benchmarks/_models.py; each text
embedded once across the trials). The time the model takes to embed one question,
and all the memories, is reported apart.

    .venv/bin/python benchmarks/hybrid_recall.py [--quick] [--model default]  # make bench-hybrid
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from _models import MODELS, CachedEmbedder, load_model, missing_packages
from locomo_recall import DEFAULT_DATA, load_locomo, measure

from recallstore._search.fusion import VECTOR_WEIGHT, FusionMethod
from recallstore.backends._tuning import tune
from recallstore.backends.sqlite import SqliteMemoryStore

TRIALS: list[tuple[FusionMethod, float] | None] = [
    None,
    ("zscore", VECTOR_WEIGHT),
    *[("zscore", weight) for weight in (0.25, 0.45, 0.55, 1.0)],
    *[("score", weight) for weight in (0.3, 0.5)],
    *[("minmax", weight) for weight in (0.3, 0.5)],
    *[("rrf", weight) for weight in (0.3, 0.5)],
]


async def run(data: Path, quick: bool, model_name: str) -> None:
    inputs, questions, _ = load_locomo(data)
    model = load_model(model_name)
    started = time.perf_counter()
    embed_queries = getattr(model, "embed_queries", model.embed)  # a query's own path
    for question in questions[:50]:
        await embed_queries([question.text])
    per_query = 1000 * (time.perf_counter() - started) / 50
    print(f"{model.name}: {per_query:.1f} ms to embed one question (CPU, batch of one)")
    embedder = CachedEmbedder(model)
    started = time.perf_counter()
    await embedder.embed([memory.content for memory in inputs])
    print(f"{len(inputs)} memories embedded in {time.perf_counter() - started:.1f} s")
    trials = TRIALS[:2] if quick else list(dict.fromkeys(TRIALS))
    for fusion in trials:
        with tempfile.TemporaryDirectory(prefix="recallstore-hybrid-") as tmp:
            store = tune(
                SqliteMemoryStore(
                    Path(tmp) / "memory.db", embedder=None if fusion is None else embedder
                ),
                fusion=fusion,
            )
            name = "keyword" if fusion is None else f"{fusion[0]} w={fusion[1]}"
            result = await measure(name, store, inputs, questions, 10)
        by_category = " ".join(f"{c}:{result.recall({c}):.3f}" for c in (1, 2, 3, 4))
        print(f"{name:14s} recall@10 (1-4) {result.recall({1, 2, 3, 4}):.3f}   {by_category}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--quick", action="store_true", help="keyword and the default only")
    parser.add_argument("--model", choices=MODELS, default="mpnet", help="the embedding model")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"skipped: LoCoMo data not found at {args.data}")
        return 0
    missing = missing_packages(args.model)
    if missing:
        print(
            f"skipped: the benchmark model is not installed ({', '.join(missing)}); "
            "make bench-hybrid installs it"
        )
        return 0
    asyncio.run(run(args.data, args.quick, args.model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
