"""docs/recall-format.md shows the recall block exactly as ``render_recall`` renders it
today: the block in its Format section is compared with a real rendering of the same
records, so a change of the template fails here until the page shows the new block."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from recallstore import MemoryRecord
from recallstore.prompt import render_recall
from recallstore.recall import Recall

PAGE = Path(__file__).resolve().parents[2] / "docs" / "recall-format.md"
ANA = {"tenant": "acme", "user": "ana"}


def _record(
    record_id: str, kind: str, saved: int, content: str, said: int | None = None
) -> MemoryRecord:
    at = datetime(2026, 3, saved, 9, 30, tzinfo=UTC)
    return MemoryRecord(
        id=record_id,
        scope=ANA,
        kind=kind,
        content=content,
        created_at=at,
        updated_at=at,
        observed_at=None if said is None else datetime(2026, 2, said, 18, 0, tzinfo=UTC),
    )


def the_documented_recall() -> Recall:
    """The recall the page's example block shows: a profile entry, two hits (one said
    on an earlier day than it was saved), and three entries left out by the budget."""
    entries = (
        _record("01jq7w3k5d0f2v6n8r4t1y9x0a", "profile", 1, "The user's name is Ana."),
        _record("01jq7w3k5f6c1n2p3q4r5s6t7v", "preference", 3, "Prefers short, direct answers."),
        _record("01jq7w3k5h8d2p4r6t8v0x2z4b", "fact", 3, "Moved to Lisbon in May.", said=27),
    )
    return Recall(
        scope=ANA,
        user_text="Where do I live now?",
        entries=entries,
        profile_count=1,
        hit_count=2,
        omitted=3,
        truncated=True,
        budget_chars=2000,
        used_chars=0,
    )


def test_the_page_shows_the_block_render_recall_renders() -> None:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("\n## Format\n", 1)[1]
    found = re.search(r"```text\n(.*?)\n```", section, flags=re.DOTALL)
    assert found is not None, "no ```text block in the Format section"
    rendered = render_recall(the_documented_recall())
    assert found.group(1) == rendered, f"docs/recall-format.md should show:\n{rendered}"
