"""The paraphrase suite: a new conversation that asks in other words recalls the memory.

All the suite's memories are saved for one user in a real SQLite file; then each first
message opens a conversation (``MemoryCapability.instantiate``) and the pair's memory
must be in its recall block. The profile listing is turned off (``profile_limit=0``):
it puts up to 20 profile records into every block whatever the message, which would
hand the profile pairs over without any search. With the default embedder at least
90 % are recalled; keyword search alone, the same way, recalls next to none.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from tests.hybrid._paraphrases import PARAPHRASES, Paraphrase

from recallstore._search.query import document_stems, plan_query
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.capability import MemoryCapability
from recallstore.embedding import Embedder
from recallstore.records import MemoryWriteInput
from recallstore.store import MemoryStore

pytest.importorskip("onnxruntime", reason="the default embedder needs the semantic extra")

ANA = {"tenant": "acme", "user": "ana"}


def test_the_suite_is_large_varied_and_shares_no_searchable_word() -> None:
    assert len(PARAPHRASES) >= 30
    kinds = Counter(pair.kind for pair in PARAPHRASES)
    assert set(kinds) == {"profile", "preference", "fact", "episode"}
    assert min(kinds.values()) >= 7
    for pair in PARAPHRASES:
        asked = {term.stem for term in plan_query(pair.first_message)}
        assert asked.isdisjoint(document_stems(pair.memory)), pair


async def recalled(store: MemoryStore, pairs: tuple[Paraphrase, ...]) -> list[Paraphrase]:
    """The pairs whose memory is in the recall block its first message opens with."""
    await store.write(
        [MemoryWriteInput(scope=ANA, kind=pair.kind, content=pair.memory) for pair in pairs]
    )
    capability = MemoryCapability(store, scope_fields=("tenant", "user"), profile_limit=0)
    found = []
    for number, pair in enumerate(pairs):
        memory = await capability.instantiate(
            ANA, conversation_id=f"c{number}", first_user_text=pair.first_message
        )
        if memory.recall_block is not None and pair.memory in memory.recall_block:
            found.append(pair)
    return found


async def share_recalled(path: Path, embedder: Embedder | str | None) -> float:
    async with SqliteMemoryStore(path, embedder=embedder) as store:
        return len(await recalled(store, PARAPHRASES)) / len(PARAPHRASES)


async def test_the_default_embedder_recalls_at_least_nine_in_ten(tmp_path: Path) -> None:
    keyword = await share_recalled(tmp_path / "keyword.db", None)
    default = await share_recalled(tmp_path / "default.db", "default")
    report = f"recalled: default embedder {default:.0%}, keyword search alone {keyword:.0%}"
    print(report)
    assert default >= 0.9, report
    assert keyword <= 0.1, report
