"""The in-memory reference backend runs the whole conformance kit.

The second half proves the kit has teeth: each "mutant" below is the reference
backend with one plausible bug, and the named kit test must fail against it (the
same test passes against the reference in ``TestInMemoryConformance``).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import re
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, given, settings

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.errors import MemoryConflictError, MemoryNotFoundError, MissingDependencyError
from recallstore.records import (
    MAX_LIMIT,
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
)
from recallstore.testing import MemoryStoreConformance, StoreFactory, differential

DOCS = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


class TestInMemoryConformance(MemoryStoreConformance):
    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        return InMemoryMemoryStore


def test_kit_import_without_its_extra_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # None makes `import` fail
    for name in [name for name in sys.modules if name.startswith("recallstore.testing")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(MissingDependencyError) as caught:
        importlib.import_module("recallstore.testing")
    assert caught.value.extra == "testing"
    assert "pip install 'recallstore[testing]'" in str(caught.value)


def test_docs_list_every_kit_test() -> None:
    kit_tests = {name for name in dir(MemoryStoreConformance) if name.startswith("test_")}
    documented = set(re.findall(r"`(test_(?:s\d|ext_)[\w]*)`", DOCS.read_text(encoding="utf-8")))
    assert kit_tests - documented == set(), "kit tests missing from docs/conformance.md"
    assert documented - kit_tests == set(), "docs/conformance.md lists tests that do not exist"


# --- Mutants: the reference backend with one plausible bug each ---------------------------


class _Mutant(InMemoryMemoryStore):
    async def _everything(self, query: MemorySearchQuery) -> list[MemoryHit]:
        wide = query.model_copy(update={"limit": MAX_LIMIT, "scope": {}, "tags": None})
        return await InMemoryMemoryStore.search(self, wide)


class NoUpdatedAtBumpOnSupersede(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        originals = {i.supersedes: self._records.get(i.supersedes) for i in inputs if i.supersedes}
        created = await super().write(inputs)
        for record_id, original in originals.items():
            if original is not None:
                old = self._records[record_id]
                self._records[record_id] = old.model_copy(
                    update={"updated_at": original.updated_at}
                )
        return created


class UpdatedAtDiffersOnCreate(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        created = await super().write(inputs)
        bumped = [r.model_copy(update={"updated_at": self._clock()}) for r in created]
        self._records.update({r.id: r for r in bumped})
        return bumped


class PartialBatchOnFailure(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        written: list[MemoryRecord] = []
        for inp in inputs:
            written.extend(await super().write([inp]))
        return written


class SupersedeOfInvalidForks(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        for inp in inputs:
            old = self._records.get(inp.supersedes or "")
            if old is not None:
                self._records[old.id] = old.model_copy(update={"invalid_at": None})
        return await super().write(inputs)


class SupersedeOfMissingIsIgnored(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        fixed = [
            i if i.supersedes in self._records else i.model_copy(update={"supersedes": None})
            for i in inputs
        ]
        return await super().write(fixed)


class RacySupersede(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        for inp in inputs:
            old = self._records.get(inp.supersedes or "")
            if inp.supersedes and old is None:
                raise MemoryNotFoundError(inp.supersedes)
            if old is not None and old.is_invalidated:
                raise MemoryConflictError(old.id, "already invalid")
        await asyncio.sleep(0)  # check-then-act without holding a lock
        for inp in inputs:
            old = self._records.get(inp.supersedes or "")
            if old is not None:
                self._records[old.id] = old.model_copy(update={"invalid_at": None})
        return await super().write(inputs)


class ReinvalidateOverwrites(_Mutant):
    async def invalidate(self, id: str, reason: str | None = None) -> None:
        old = self._records.get(id)
        if old is not None:
            self._records[id] = old.model_copy(update={"invalid_at": None})
        await super().invalidate(id, reason)


class InvalidateOfMissingIsSilent(_Mutant):
    async def invalidate(self, id: str, reason: str | None = None) -> None:
        if id in self._records:
            await super().invalidate(id, reason)


class DeleteOfMissingRaises(_Mutant):
    async def delete(self, id: str) -> None:
        if id not in self._records:
            raise MemoryNotFoundError(id)
        await super().delete(id)


class DeleteHidesFromGetOnly(_Mutant):
    def __init__(self) -> None:
        super().__init__()
        self._deleted: set[str] = set()

    async def delete(self, id: str) -> None:
        self._deleted.add(id)

    async def get(self, id: str) -> MemoryRecord | None:
        return None if id in self._deleted else await super().get(id)


class GetHidesInvalidated(_Mutant):
    async def get(self, id: str) -> MemoryRecord | None:
        record = await super().get(id)
        return None if record is None or record.is_invalidated else record


class ExactScopeMatch(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        hits = await super().search(query.model_copy(update={"limit": MAX_LIMIT}))
        return [h for h in hits if not query.scope or h.record.scope == query.scope][: query.limit]


class ScopeValuesWithoutKeys(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        wanted = set(query.scope.values())
        hits = await super().search(query.model_copy(update={"scope": {}, "limit": MAX_LIMIT}))
        return [h for h in hits if wanted <= set(h.record.scope.values())][: query.limit]


class EmptyKindsMeansAll(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if query.kinds == ():
            query = query.model_copy(update={"kinds": None})
        return await super().search(query)


class TagsMatchAny(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if not query.tags:
            return await super().search(query)
        hits = await super().search(query.model_copy(update={"tags": None, "limit": MAX_LIMIT}))
        wanted = set(query.tags)
        return [h for h in hits if wanted & set(h.record.tags)][: query.limit]


class ReturnsInvalidated(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"include_invalidated": True}))


class IgnoresExpiry(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"include_expired": True}))


class ListsOldestFirst(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if not query.is_listing:
            return await super().search(query)
        hits = await super().search(query.model_copy(update={"limit": MAX_LIMIT}))
        return hits[::-1][: query.limit]


class BlankQueryIsAKeywordQuery(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return [] if query.query is not None and query.is_listing else await super().search(query)


class RanksByRecencyOnly(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        hits = await super().search(query.model_copy(update={"limit": MAX_LIMIT}))
        hits.sort(key=lambda h: (h.record.created_at, h.record.id), reverse=True)
        return hits[: query.limit]


class CaseSensitiveMatching(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        hits = await super().search(query)
        words = (query.query or "").split()
        return (
            hits
            if query.is_listing
            else [h for h in hits if any(w in h.record.content for w in words)]
        )


class SubstringMatching(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if query.is_listing:
            return await super().search(query)
        hits = await super().search(query.model_copy(update={"query": None, "limit": MAX_LIMIT}))
        words = re.findall(r"[^\W_]+", (query.query or "").casefold())
        return [h for h in hits if any(w in h.record.content.casefold() for w in words)][
            : query.limit
        ]


class WordlessQueryIsAListing(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if not re.search(r"[^\W_]", query.query or ""):
            query = query.model_copy(update={"query": None})
        return await super().search(query)


class ReturnsEveryRecordForAnyQuery(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"query": None}))


class LimitZeroMeansDefault(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"limit": query.limit or 10}))


class CapsLimitAtHundred(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        return await super().search(query.model_copy(update={"limit": min(query.limit, 100)}))


class FtsSyntaxErrors(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if any(char in (query.query or "") for char in '"*():^'):
            raise ValueError("fts5: syntax error near '\"'")
        return await super().search(query)


class TruncatesLongContent(_Mutant):
    async def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        short = [i.model_copy(update={"content": i.content[:8000]}) for i in inputs]
        return await super().write(short)


class FlipFloppingCapabilities(_Mutant):
    def capabilities(self) -> MemoryStoreCapabilities:
        self._calls = getattr(self, "_calls", 0) + 1
        return MemoryStoreCapabilities(search="keyword" if self._calls % 2 else "hybrid")


class ClaimsDurability(_Mutant):
    def capabilities(self) -> MemoryStoreCapabilities:
        return MemoryStoreCapabilities(search="keyword", durable=True)


class KeywordSearchIgnoresTags(_Mutant):
    async def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        if not query.is_listing:
            query = query.model_copy(update={"tags": None})
        return await super().search(query)


_MUTANTS = [
    (NoUpdatedAtBumpOnSupersede, "test_s3_supersede_bumps_the_old_records_updated_at", {}),
    (UpdatedAtDiffersOnCreate, "test_s2_created_at_equals_updated_at_on_create", {}),
    (PartialBatchOnFailure, "test_s1_batch_with_a_conflict_in_the_middle_writes_nothing", {}),
    (
        PartialBatchOnFailure,
        "test_s14_batch_whose_last_item_supersedes_a_missing_record_writes_none_of_it",
        {},
    ),
    (
        SupersedeOfInvalidForks,
        "test_s3_supersede_of_an_invalidated_record_is_a_conflict_and_writes_nothing",
        {},
    ),
    (
        SupersedeOfMissingIsIgnored,
        "test_s3_supersede_of_a_missing_record_is_not_found_and_writes_nothing",
        {},
    ),
    (RacySupersede, "test_s3_two_concurrent_supersedes_of_one_record_exactly_one_wins", {}),
    (ReinvalidateOverwrites, "test_s4_invalidating_twice_changes_nothing", {}),
    (InvalidateOfMissingIsSilent, "test_s4_invalidate_of_a_missing_record_is_not_found", {}),
    (DeleteOfMissingRaises, "test_s5_delete_of_a_missing_record_is_not_an_error", {}),
    (DeleteHidesFromGetOnly, "test_s5_deleted_record_is_never_returned_by_search", {}),
    (GetHidesInvalidated, "test_s6_get_returns_invalidated_superseded_and_expired_records", {}),
    (
        ExactScopeMatch,
        "test_s7_tenant_filter_finds_tenant_wide_and_per_user_records",
        {"query": None},
    ),
    (ScopeValuesWithoutKeys, "test_s7_scope_keys_are_not_interchangeable", {}),
    (EmptyKindsMeansAll, "test_s8_empty_kinds_matches_nothing", {"query": "orchid"}),
    (TagsMatchAny, "test_s8_tags_filter_requires_every_listed_tag", {"query": None}),
    (ReturnsInvalidated, "test_s9_invalidated_records_need_include_invalidated", {"query": None}),
    (IgnoresExpiry, "test_s9_expired_records_need_include_expired", {"query": "orchid"}),
    (ListsOldestFirst, "test_s10_listing_is_newest_first", {}),
    (BlankQueryIsAKeywordQuery, "test_s10_blank_query_is_a_recency_listing", {"blank": "  "}),
    (RanksByRecencyOnly, "test_s11_rarer_term_ranks_above_commoner_term", {}),
    (RanksByRecencyOnly, "test_s11_more_matching_terms_rank_higher", {}),
    (CaseSensitiveMatching, "test_s11_case_and_punctuation_do_not_change_results", {}),
    (SubstringMatching, "test_s11_terms_match_whole_words_not_substrings", {}),
    (
        WordlessQueryIsAListing,
        "test_s10_query_without_word_tokens_returns_nothing",
        {"wordless": "!!!"},
    ),
    (
        ReturnsEveryRecordForAnyQuery,
        "test_s10_keyword_search_returns_only_records_sharing_a_query_term",
        {},
    ),
    (LimitZeroMeansDefault, "test_s12_limit_zero_returns_empty_list", {"query": None}),
    (CapsLimitAtHundred, "test_s12_maximum_limit_returns_a_thousand_records", {"query": None}),
    (TruncatesLongContent, "test_s14_values_at_every_limit_are_stored_without_loss", {}),
    (FlipFloppingCapabilities, "test_s15_capabilities_declare_search_mode_and_durability", {}),
]

_HOSTILE = "test_s13_hostile_query_never_raises_and_matches_only_its_words"
_RAISING_MUTANTS = [
    (FtsSyntaxErrors, _HOSTILE, {"query": 'NEAR("copper" "kettle", 3)', "must_find": ("copper",)}),
    (SubstringMatching, _HOSTILE, {"query": "c_pper", "must_find": ()}),
]


async def _run_kit_test(name: str, store: InMemoryMemoryStore, **arguments: Any) -> None:
    test: Callable[..., Coroutine[Any, Any, None]] = getattr(MemoryStoreConformance(), name)
    # Sub-suite tests take the store under the fixture name that gates them.
    gated = {"keyword_store", "durable_store"} & set(inspect.signature(test).parameters)
    await test(**{gated.pop() if gated else "store": store}, **arguments)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("mutant", "kit_test", "arguments"),
    [*_MUTANTS, *_RAISING_MUTANTS],
    ids=[f"{mutant.__name__}-{test}" for mutant, test, _ in [*_MUTANTS, *_RAISING_MUTANTS]],
)
async def test_the_kit_fails_a_backend_that_breaks_the_rule(
    mutant: type[InMemoryMemoryStore], kit_test: str, arguments: dict[str, Any]
) -> None:
    async with mutant() as store:
        with pytest.raises((AssertionError, pytest.fail.Exception, ValueError, LookupError)):
            await _run_kit_test(kit_test, store, **arguments)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "kit_test",
    [
        "test_s15_durable_store_keeps_everything_after_reopening",
        "test_s15_two_open_stores_see_each_others_writes",
    ],
)
async def test_the_kit_fails_a_store_that_claims_durability_it_lacks(kit_test: str) -> None:
    async with ClaimsDurability() as store:
        with pytest.raises(AssertionError):
            await _run_kit_test(kit_test, store, store_factory=ClaimsDurability)


@pytest.mark.parametrize("mutant", [KeywordSearchIgnoresTags, IgnoresExpiry])
def test_the_differential_test_finds_a_filter_bug(mutant: type[InMemoryMemoryStore]) -> None:
    divergences: list[list[Any]] = []

    @settings(
        max_examples=60,
        database=None,
        derandomize=True,
        deadline=None,
        phases=[Phase.generate],
    )
    @given(differential._OPERATIONS)
    def probe(operations: list[Any]) -> None:
        try:
            asyncio.run(differential._run_against_reference(mutant, operations))
        except AssertionError:
            divergences.append(operations)

    probe()
    assert divergences, f"the differential test never noticed {mutant.__name__}"
