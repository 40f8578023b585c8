"""A plan's diff shows the day a thing was said, with the save day beside it when that is
another day (issue 41); a plan kept before plans recorded the said day still reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.consolidation import Plan, PlannedRecord, apply_plan, consolidate, kept_plans
from recallstore.records import MemoryWriteInput

ANA = {"tenant": "acme", "user": "ana"}


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_the_days_of_a_planned_record() -> None:
    saved = _at("2024-11-20T10:00:00")
    base = {"id": "r1", "kind": "fact", "content": "x", "created_at": saved}
    assert PlannedRecord(**base, observed_at=_at("2024-11-02T09:00")).days == (
        "2024-11-02, saved 2024-11-20"
    )
    assert PlannedRecord(**base, observed_at=_at("2024-11-20T08:00")).days == "2024-11-20"
    # A plan body kept before the field existed has none: the save day alone.
    old = PlannedRecord.model_validate_json(
        json.dumps({**base, "created_at": "2024-11-20T10:00:00Z"})
    )
    assert old.observed_at is None
    assert old.days == "2024-11-20"


async def test_a_kept_plan_keeps_the_said_day_and_an_older_body_still_reads(
    tmp_path: Path,
) -> None:
    async with SqliteMemoryStore(tmp_path / "m.db") as store:
        first, again = await store.write(
            [
                MemoryWriteInput(
                    scope=ANA, content="Lives in Lisbon.", observed_at=_at("2024-11-02")
                ),
                MemoryWriteInput(
                    scope=ANA, content="lives in lisbon", observed_at=_at("2024-11-03")
                ),
            ]
        )
        plan = await consolidate(store, ANA)
        saved = first.created_at.strftime("%Y-%m-%d")
        assert f"[{again.id} fact 2024-11-03, saved {saved}] lives in lisbon" in plan.diff()
        await apply_plan(store, plan)
        [(kept, _)] = await kept_plans(store, ANA)
        assert kept.records[first.id].observed_at == _at("2024-11-02")
        assert kept.diff() == plan.diff()
    # The body as an older recallstore wrote it (no observed_at) reads as the save day.
    body = json.loads(plan.model_dump_json())
    for record in body["records"].values():
        del record["observed_at"]
    older = Plan.model_validate(body)
    assert f"[{again.id} fact {saved}] lives in lisbon" in older.diff()
