"""The forget preview (the lens's confirmation, ``recallstore forget``'s) names what the
forget then takes, on every bundled backend: its records, the plans it redacts, the
journal entries it erases or scrubs."""

from __future__ import annotations

from typing import cast

import pytest
from tests.consolidation.conftest import Opener

from recallstore._forget_preview import ForgetPreview, preview_forget
from recallstore.backends.journal import SupportsJournal
from recallstore.consolidation import apply_plan, consolidate, kept_plans
from recallstore.context import call_context
from recallstore.errors import MemoryValidationError
from recallstore.records import MemorySearchQuery, MemoryWriteInput, Provenance
from recallstore.store import JOURNAL_EXTENSION, REVISE_EXTENSION, SupportsForget

ANA = {"tenant": "t", "user": "qzpreviewana"}
BO = {"tenant": "t", "user": "bo"}


async def test_the_preview_is_what_the_forget_takes(opener: Opener) -> None:
    async with opener() as store:
        extensions = store.capabilities().extensions
        with call_context(conversation_id="conv-ana", run_id="run-ana"):
            written = await store.write(
                [
                    MemoryWriteInput(scope=ANA, content="Ana likes oolong.", kind="preference"),
                    MemoryWriteInput(scope=ANA, content="ana likes oolong", kind="preference"),
                    MemoryWriteInput(
                        scope=ANA,
                        content="Ana lives in Faro.",
                        provenance=Provenance(conversation_id="conv-ana"),
                    ),
                ]
            )
            await store.write([MemoryWriteInput(scope=BO, content="Bo rows.")])
            await store.search(MemorySearchQuery(query="oolong", scope=ANA))
        plan = await consolidate(store, ANA)
        await apply_plan(store, plan)
        journal = store if JOURNAL_EXTENSION in extensions else None
        if journal is not None:
            await cast(SupportsJournal, journal).flush_journal()
            before = await cast(SupportsJournal, journal).read_journal(limit=10_000)

        preview = await preview_forget(store, {"user": "qzpreviewana"})
        assert set(preview.record_ids) == {record.id for record in written}
        assert preview.by_kind == {"fact": 1, "preference": 2}
        assert preview.describe()[0] == "3 records (1 fact, 2 preference)"
        nothing = await preview_forget(store, {"user": "nobody"})
        assert nothing == _nothing(preview.keeps_plans, preview.journal_erased is not None)
        assert not nothing.touches_anything

        assert await cast(SupportsForget, store).forget({"user": "qzpreviewana"}) == 3
        if REVISE_EXTENSION in extensions:
            redacted = [found.id for found, _ in await kept_plans(store) if found.forgotten]
            assert list(preview.plans) == redacted == [plan.id]
        if journal is not None:
            after = {
                entry.id: entry.envelope
                for entry in await cast(SupportsJournal, journal).read_journal(limit=10_000)
            }
            changed = [entry for entry in before if after.get(entry.id) != entry.envelope]
            assert preview.journal_erased is not None
            assert preview.journal_scrubbed is not None
            assert preview.journal_erased > 0
            assert len(changed) == preview.journal_erased + preview.journal_scrubbed


def _nothing(keeps_plans: bool, journals: bool) -> ForgetPreview:
    """What the preview of a scope holding nothing looks like."""
    return ForgetPreview(
        scope={"user": "nobody"},
        record_ids=(),
        by_kind={},
        journal_erased=0 if journals else None,
        journal_scrubbed=0 if journals else None,
        keeps_plans=keeps_plans,
    )


async def test_the_preview_refuses_an_empty_scope(opener: Opener) -> None:
    async with opener() as store:
        with pytest.raises(MemoryValidationError) as refused:
            await preview_forget(store, {})
        assert refused.value.field == "scope"
