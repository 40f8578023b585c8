"""How much of the exact nearest records the shortlist of broad hybrid searches keeps.

Beyond ``EXACT_ROWS`` vectors, ``VectorRows.closest`` compares a query exactly with a
shortlist only: the rows whose sign bits differ least from the query's, one row in
``SHORTLIST_SHARE`` (see src/recallstore/backends/_vectors.py). This script measures,
on real sentence embeddings from the benchmark's model, how many of the exact ``k``
nearest the shortlist returns (overlap@k), for several shortlist shares.

The texts are not LoCoMo's: they are sentences of the docstrings of every module
importable in this venv (the standard library, numpy, torch, ...), a few tens of
thousands of varied English sentences; ``--texts`` of them are embedded (mpnet: about
25 a second on two cores; the vectors are kept in ``--cache``), 400 held out as
queries. A store of N records asked for its ``FUSION_DEPTH`` (100) nearest at 100,000
records ranks them as a store of ``--texts`` records would its ``100 * texts / 100,000``
nearest, so k is scaled that way, beside k = 10.

    make bench-hybrid   # or: .venv/bin/python benchmarks/vector_shortlist.py [--texts 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import io
import pkgutil
import random
import re
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from _models import load_model, missing_packages

from recallstore._search.fusion import FUSION_DEPTH
from recallstore.backends import _vectors
from recallstore.backends._vectors import VectorRows, embed_texts, top_cosine
from recallstore.embedding import Embedder

QUERIES = 400
SKIPPED_MODULES = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test"}


def docstring_sentences() -> list[str]:
    """Every docstring sentence of 40-300 characters of the importable modules, in a
    fixed shuffled order."""
    found: set[str] = set()

    def take(text: object) -> None:
        if isinstance(text, str):
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
                if 40 <= len(sentence) <= 300 and sentence[0].isupper():
                    found.add(sentence)

    def walk(module: Any) -> None:
        for value in list(vars(module).values()):
            take(getattr(value, "__doc__", None))
            if isinstance(value, type):
                for member in list(vars(value).values()):
                    take(getattr(member, "__doc__", None))

    names = sorted({module.name for module in pkgutil.iter_modules()})
    for name in names:
        if name in SKIPPED_MODULES or name.startswith("_"):
            continue
        for module in _modules(name):
            walk(module)
    ordered = sorted(found)
    random.Random(0).shuffle(ordered)
    return ordered


def _modules(name: str) -> list[Any]:
    """``name`` and its submodules that import quietly (tests left out)."""
    loaded: list[Any] = []
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        pending = [name]
        while pending:
            current = pending.pop()
            try:
                module = importlib.import_module(current)
            except BaseException:  # any module may fail, even exit, when imported alone
                continue
            loaded.append(module)
            for sub in pkgutil.iter_modules(getattr(module, "__path__", None) or []):
                if "test" not in sub.name and not sub.name.startswith("_"):
                    pending.append(f"{current}.{sub.name}")
    return loaded


def embeddings(model_name: str, texts: int, cache: Path) -> Any:
    """The unit vectors of the first ``texts`` sentences, from ``cache`` when there."""
    np = _vectors.numpy()
    if cache.is_file():
        matrix = np.load(cache)
        if len(matrix) >= texts:
            return matrix[:texts]
    sentences = docstring_sentences()[:texts]
    matrix = asyncio.run(_embedded(load_model(model_name), sentences))
    np.save(cache, matrix)
    return matrix


async def _embedded(model: Embedder, sentences: list[str]) -> Any:
    parts = []
    for start in range(0, len(sentences), 1000):
        parts.append(await embed_texts(model, sentences[start : start + 1000]))
        print(f"  embedded {start + len(parts[-1]):,} of {len(sentences):,}", flush=True)
    return _vectors.numpy().concatenate(parts)


def overlaps(matrix: Any, k: int, share: int) -> tuple[float, float]:
    """Mean and 5th percentile of overlap@k between the shortlist and the exact best."""
    np = _vectors.numpy()
    queries, stored = matrix[:QUERIES], matrix[QUERIES:]
    rows = VectorRows(stored.shape[1])
    rows.put(range(len(stored)), stored)
    saved = _vectors.EXACT_ROWS, _vectors.SHORTLIST_SHARE
    _vectors.EXACT_ROWS, _vectors.SHORTLIST_SHARE = 0, share
    try:
        found = []
        for query in queries:
            exact = {row for _, row in top_cosine(stored, query, k)}
            kept = {row for _, row in rows.closest(query, k)}
            found.append(len(exact & kept) / k)
    finally:
        _vectors.EXACT_ROWS, _vectors.SHORTLIST_SHARE = saved
    return float(np.mean(found)), float(np.percentile(found, 5))


def run(model_name: str, texts: int, cache: Path) -> None:
    matrix = embeddings(model_name, texts, cache)
    stored = len(matrix) - QUERIES
    scaled = max(FUSION_DEPTH * stored // 100_000, 1)
    print(f"{stored:,} stored sentences, {QUERIES} held-out queries, model {model_name}")
    print(f"{'shortlist':>12s} {'k':>5s} {'overlap@k':>10s} {'5th pct':>8s}")
    for share in (100, 50, 25):
        for k in sorted({10, scaled}):
            mean, low = overlaps(matrix, k, share)
            print(f"{100 / share:11.1f}% {k:5d} {mean:10.3f} {low:8.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mpnet", "minilm"], default="mpnet")
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--cache", type=Path, help="the vectors' .npy file (kept for reruns)")
    args = parser.parse_args(argv)
    missing = missing_packages(args.model)
    if missing:
        print(f"skipped: needs {', '.join(missing)} (make bench-hybrid installs them)")
        return 0
    cache = args.cache or Path(tempfile.gettempdir()) / (
        f"recallstore-shortlist-{args.model}-{args.texts}.npy"
    )
    run(args.model, args.texts, cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
