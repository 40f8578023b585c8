"""Max-score pruning of the Postgres keyword candidates: when more records match than a
search scores in full, the best are read from the rarest stems' records only when that
provably gives the same candidates; the answers never differ from ranking every match."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.postgres import search as postgres_search

# 1,200 records, more than a search scores in full (EXHAUSTIVE_SCOPE): "common" in all,
# "rare" in 150, "alpha" and "beta" together in 300 (so together they outweigh "rare").
_RECORDS = [
    " ".join(
        word
        for word, holds in (
            ("common", True),
            ("rare", i % 8 == 0),
            ("alpha", i % 4 == 1),
            ("beta", i % 4 == 1),
            (f"filler{i % 37}", True),
        )
        if holds
    )
    for i in range(1_200)
]


async def _answers(
    store: PostgresMemoryStore, text: str, scope: dict[str, str]
) -> list[tuple[str, float | None]]:
    hits = await store.search(MemorySearchQuery(query=text, scope=scope, limit=20))
    return [(hit.record.id, None if hit.score is None else round(hit.score, 9)) for hit in hits]


@pytest.mark.parametrize(
    ("text", "pruned"),
    [
        ("common rare", ["rare"]),  # every "rare" record outweighs "common" alone
        ("rare alpha beta common", None),  # alpha + beta outweigh rare: every match ranked
    ],
)
@pytest.mark.parametrize("scoped", [False, True])
async def test_pruned_candidates_rank_exactly_as_every_match(
    postgres_url: str,
    postgres_schema: str,
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    pruned: list[str] | None,
    scoped: bool,
) -> None:
    scope = {"user": "u1"} if scoped else {}
    async with PostgresMemoryStore(postgres_url, schema=postgres_schema) as store:
        await store.write(
            [MemoryWriteInput(scope={"user": "u1"}, content=content) for content in _RECORDS]
            + [
                MemoryWriteInput(scope={"user": "u2"}, content=f"common rare elsewhere {i}")
                for i in range(3)
            ]
        )
        read: list[list[str]] = []
        matching = postgres_search._matching

        def spy(stems: Sequence[str], in_scope: str | None) -> str:
            read.append(list(stems))
            return matching(stems, in_scope)

        monkeypatch.setattr(postgres_search, "_matching", spy)
        found = await _answers(store, text, scope)
        first = list(read)
        # The same search with pruning refused: every match ranked.
        monkeypatch.setattr(postgres_search, "_MARGIN", float("inf"))
        ranked_in_full = await _answers(store, text, scope)

    assert found == ranked_in_full
    assert len(found) == 20
    # What the first search's last read asked the index for: the rare stem's records
    # only, or every match.
    assert sorted(first[-1]) == (pruned or sorted(text.split()))
