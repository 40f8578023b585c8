"""LongMemEval dev stored through ``capture``: which roles and chunk sizes retrieve best.

Each haystack session of each answerable question (``longmemeval-dev/``) is one
transcript of ``(role, text, session date)`` messages, captured in a fresh in-memory
store as ``conversation_id=<session id>``; then ``search(question)`` ranks sessions by
their best hit and ``R_all@5`` is the fraction of questions whose every answer session
is among the first 5 (as ``recall_block.py`` scores it). The variants, side by side in
one run: one record per user turn written directly (what ``recall_block.py`` stores),
capture of user messages only, and capture with its default roles (user and assistant)
at several ``max_chunk_chars``.

    .venv/bin/python benchmarks/longmemeval_capture.py [--embedder default]
        [--chunks 500,1000,2000]

Keyword search by default (about 4 minutes); ``--embedder default`` embeds every
assistant message too (far longer on a 2-core machine). Skips cleanly without data.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import recall_block as rb
from _models import CachedEmbedder, missing_packages

from recallstore import MemoryWriteInput
from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.capture import DEFAULT_MAX_CHUNK_CHARS, DEFAULT_ROLES, capture
from recallstore.embedding import default_embedder
from recallstore.records import MAX_CONTENT_CHARS, MemorySearchQuery

Variant = tuple[Sequence[str], int] | None
"""(roles, max_chunk_chars) for capture; None: one record per user turn, no capture."""


async def answered(item: dict[str, Any], variant: Variant, embedder: object) -> bool:
    """Whether every answer session of ``item`` is among search's first 5 sessions."""
    scope = {"user": "u"}
    async with InMemoryMemoryStore(
        embedder=embedder if isinstance(embedder, CachedEmbedder) else None
    ) as store:
        sessions = zip(
            item["haystack_session_ids"],
            item["haystack_dates"],
            item["haystack_sessions"],
            strict=True,
        )
        direct: list[MemoryWriteInput] = []
        for session_id, day, session in sessions:
            when = rb._date(day)
            turns = [turn for turn in session if turn["content"].strip()]
            if variant is None:
                direct += [
                    MemoryWriteInput(
                        scope=scope,
                        kind="episode",
                        content=turn["content"][:MAX_CONTENT_CHARS],
                        observed_at=when,
                        payload={"conversation_id": session_id},
                    )
                    for turn in turns
                    if turn["role"] == "user"
                ]
                continue
            roles, chunk = variant
            transcript = [(turn["role"], turn["content"], when) for turn in turns]
            await capture(
                store,
                scope,
                transcript,
                conversation_id=session_id,
                roles=roles,
                max_chunk_chars=chunk,
            )
        for offset in range(0, len(direct), 500):
            await store.write(direct[offset : offset + 500])
        hits = await store.search(MemorySearchQuery(query=item["question"], scope=scope, limit=50))
    ranked = list(
        dict.fromkeys(
            hit.record.payload["conversation_id"]
            for hit in hits
            if isinstance(hit.record.payload, dict)
        )
    )
    return set(item["answer_session_ids"]) <= set(ranked[:5])


async def run(items: list[dict[str, Any]], chunks: Sequence[int], embedder: object) -> None:
    variants: dict[str, Variant] = {
        "one record per user turn (no capture)": None,
        f"capture, user only, chunks {DEFAULT_MAX_CHUNK_CHARS}": (
            ("user",),
            DEFAULT_MAX_CHUNK_CHARS,
        ),
    }
    for chunk in chunks:
        default = " (default)" if chunk == DEFAULT_MAX_CHUNK_CHARS else ""
        variants[f"capture, user and assistant, chunks {chunk}{default}"] = (DEFAULT_ROLES, chunk)
    found: dict[str, dict[str, list[bool]]] = {name: defaultdict(list) for name in variants}
    for item in items:
        for name, variant in variants.items():
            hit = await answered(item, variant, embedder)
            found[name]["all"].append(hit)
            found[name][item["question_type"]].append(hit)
    kinds = sorted({kind for by_kind in found.values() for kind in by_kind} - {"all"})
    print("R_all@5 | " + " | ".join(f"{kind} (n={len(found[name][kind])})" for kind in kinds))
    for name, by_kind in found.items():
        cells = " ".join(f"{rb._mean(by_kind[kind]):.3f}" for kind in kinds)
        print(f"  {name:<48} {rb._mean(by_kind['all']):.3f} | {cells}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--longmemeval", type=Path, default=rb.DEFAULT_LONGMEMEVAL)
    parser.add_argument(
        "--chunks",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[500, 1_000, DEFAULT_MAX_CHUNK_CHARS],
    )
    parser.add_argument("--embedder", choices=["keyword", "default"], default="keyword")
    args = parser.parse_args(argv)
    if not args.longmemeval.is_dir():
        print(f"skipped: no LongMemEval dev data at {args.longmemeval}")
        return 0
    embedder = None
    if args.embedder == "default":
        if missing_packages("default"):
            print(f"skipped: the default embedder needs {missing_packages('default')}")
            return 0
        embedder = CachedEmbedder(default_embedder())
    items = [json.loads(path.read_text()) for path in sorted(args.longmemeval.glob("*.json"))]
    answerable = [item for item in items if not item["question_id"].endswith("_abs")]
    asyncio.run(run(answerable, args.chunks, embedder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
