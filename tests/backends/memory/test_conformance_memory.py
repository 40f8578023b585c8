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
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from tests.testing.kit_mutants import (
    BlankQueryIsAKeywordQuery,
    CapsLimitAtHundred,
    CaseSensitiveMatching,
    ClaimsDurability,
    ClosedObservedWindow,
    DeleteHidesFromGetOnly,
    DeleteOfMissingRaises,
    EmptyKindsMeansAll,
    ExactMatchEmptyScopeListing,
    ExactScopeMatch,
    FlipFloppingCapabilities,
    FtsSyntaxErrors,
    GetHidesInvalidated,
    IgnoresAsOf,
    IgnoresExpiry,
    InvalidateOfMissingIsSilent,
    KeywordSearchIgnoresTags,
    LimitZeroMeansDefault,
    ListsOldestFirst,
    NonInvalidatingSupersede,
    NoOpDelete,
    NoUpdatedAtBumpOnSupersede,
    PartialBatchOnFailure,
    RacySupersede,
    RanksByRecencyOnly,
    ReinvalidateOverwrites,
    ReturnsEveryRecordForAnyQuery,
    ReturnsInvalidated,
    RevertForgetsUpdatedAt,
    RevertWithoutChecks,
    ReviseOneByOne,
    ScopeValuesWithoutKeys,
    SubstringMatching,
    SupersedeOfInvalidForks,
    SupersedeOfMissingIsIgnored,
    TagsMatchAny,
    TruncatesLongContent,
    UpdatedAtDiffersOnCreate,
    WindowOnCreatedAt,
    WordlessQueryIsAListing,
)

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.errors import MissingDependencyError
from recallstore.records import MemoryWriteInput
from recallstore.testing import (
    CheckedStore,
    ClockedStoreFactory,
    KitRuleViolation,
    MemoryStoreConformance,
    StoreFactory,
    _operations,
    differential,
)

DOCS = Path(__file__).resolve().parents[3] / "docs" / "conformance.md"


class TestInMemoryConformance(MemoryStoreConformance):
    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        return InMemoryMemoryStore

    @pytest.fixture
    def clocked_store_factory(self) -> ClockedStoreFactory:
        return lambda clock: InMemoryMemoryStore(clock=clock)


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
    documented = set(
        re.findall(r"`(test_(?:s\d|ext_|lifecycle_)[\w]*)`", DOCS.read_text(encoding="utf-8"))
    )
    assert kit_tests - documented == set(), "kit tests missing from docs/conformance.md"
    assert documented - kit_tests == set(), "docs/conformance.md lists tests that do not exist"


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
    (ReviseOneByOne, "test_s21_revise_refuses_and_changes_nothing", {}),
    (RevertForgetsUpdatedAt, "test_s22_revert_restores_exactly_once", {}),
    (RevertWithoutChecks, "test_s22_revert_refuses_a_changed_world", {}),
]

_HOSTILE = "test_s13_hostile_query_never_raises_and_matches_only_its_words"
_RAISING_MUTANTS = [
    (FtsSyntaxErrors, _HOSTILE, {"query": 'NEAR("copper" "kettle", 3)', "must_find": ("copper",)}),
    (SubstringMatching, _HOSTILE, {"query": "c_pper", "must_find": ()}),
]


async def _run_kit_test(name: str, store: InMemoryMemoryStore, **arguments: Any) -> None:
    test: Callable[..., Coroutine[Any, Any, None]] = getattr(MemoryStoreConformance(), name)
    # Sub-suite tests take the store under the fixture name that gates them.
    gates = {
        "keyword_store",
        "durable_store",
        "shared_store",
        "single_opener_store",
        "revising_store",
    }
    gated = gates & set(inspect.signature(test).parameters)
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


_TIME_MUTANTS = [
    (IgnoresAsOf, "S20", "test_s20_as_of_shows_what_was_valid_then", {"query": None}),
    (IgnoresAsOf, "S20", "test_s20_as_of_shows_what_was_valid_then", {"query": "kettle"}),
    (IgnoresAsOf, "S20", "test_s20_as_of_judges_expiry_then", {"query": None}),
    (ClosedObservedWindow, "S19", "test_s19_observed_window_is_half_open", {"query": None}),
    (ClosedObservedWindow, "S19", "test_s19_observed_window_is_half_open", {"query": "kettle"}),
    (
        WindowOnCreatedAt,
        "S19",
        "test_s19_window_filters_on_observed_at_not_created_at",
        {"query": None},
    ),
    (WindowOnCreatedAt, "S19", "test_s19_observed_window_is_half_open", {"query": "kettle"}),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("mutant", "rule", "kit_test", "arguments"),
    _TIME_MUTANTS,
    ids=[
        f"{mutant.__name__}-{test}-{index}"
        for index, (mutant, _, test, _) in enumerate(_TIME_MUTANTS)
    ],
)
async def test_the_kit_names_the_time_rule_a_backend_breaks(
    mutant: type[InMemoryMemoryStore], rule: str, kit_test: str, arguments: dict[str, Any]
) -> None:
    async with mutant() as store:
        with pytest.raises(AssertionError) as caught:
            await _run_kit_test(kit_test, store, **arguments)
    first_line = str(caught.value).splitlines()[0]
    assert first_line.startswith(f"{rule} — "), str(caught.value)
    assert f"rule {rule}: " in str(caught.value)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("kit_test", "arguments"),
    [
        ("test_s20_as_of_shows_what_was_valid_then", {"query": None}),
        ("test_s19_observed_window_is_half_open", {"query": "kettle"}),
        ("test_s19_window_filters_on_observed_at_not_created_at", {"query": None}),
    ],
)
async def test_the_time_rules_pass_on_the_reference(
    kit_test: str, arguments: dict[str, Any]
) -> None:
    async with InMemoryMemoryStore() as store:
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


@pytest.mark.slow
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
    @given(_operations.OPERATIONS)
    def probe(operations: list[Any]) -> None:
        try:
            asyncio.run(differential._run_against_reference(mutant, operations))
        except AssertionError:
            divergences.append(operations)

    probe()
    assert divergences, f"the differential test never noticed {mutant.__name__}"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("mutant", "kit_test", "blamed"),
    [
        (ExactMatchEmptyScopeListing, "test_s6_get_returns_every_field_as_written", "S7"),
        (ExactMatchEmptyScopeListing, "test_s1_write_returns_records_in_input_order", None),
        (NoOpDelete, "test_s3_supersede_of_a_deleted_record_is_not_found", "S5"),
        (NoOpDelete, "test_s4_invalidate_of_a_deleted_record_is_not_found", "S5"),
        (NonInvalidatingSupersede, "test_s9_invalidated_records_need_include_invalidated", "S3"),
        (
            NonInvalidatingSupersede,
            "test_s5_deleting_a_superseded_record_keeps_its_successor",
            "S3",
        ),
    ],
)
async def test_a_kit_test_about_another_rule_blames_the_broken_one(
    mutant: type[InMemoryMemoryStore], kit_test: str, blamed: str | None
) -> None:
    test = getattr(MemoryStoreConformance(), kit_test)
    arguments = {"query": None} if "query" in inspect.signature(test).parameters else {}
    async with mutant() as store:
        if blamed is None:
            await test(store=CheckedStore(store), **arguments)  # this rule holds: passes
            return
        with pytest.raises(KitRuleViolation) as caught:
            await test(store=CheckedStore(store), **arguments)
    assert caught.value.rule == blamed
    assert str(caught.value).startswith(f"{blamed} — ")


def test_the_differential_test_blames_a_store_that_raises_on_query_text() -> None:
    with pytest.raises(KitRuleViolation) as caught:
        differential._explore(
            FtsSyntaxErrors, examples=40, shrink_seconds=2.0, deadline=time.monotonic() + 60
        )
    assert caught.value.rule == "S13"
    assert "the store raised ValueError" in str(caught.value)
    assert "shortest failing sequence found" in str(caught.value)


class _OneLocation:
    """A factory handing out one store object, as a durable location would be reopened."""

    def __init__(self, store: InMemoryMemoryStore) -> None:
        self.store = store

    def __call__(self) -> InMemoryMemoryStore:
        return self.store


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("mutant", "rule", "words"),
    [
        (NoOpDelete, "S5", "store not empty after deleting every listed record"),
        (ExactMatchEmptyScopeListing, "S7", "left over from an earlier example"),
    ],
)
async def test_the_differential_cleanup_is_bounded_and_names_the_rule(
    mutant: type[InMemoryMemoryStore], rule: str, words: str
) -> None:
    store = mutant()
    async with store:  # an earlier example left records behind
        await store.write(
            [MemoryWriteInput(scope={"tenant": "acme"}, content="apple river")] * 3
            + [MemoryWriteInput(scope={}, content="tiger lemon")]
        )
    operations: list[_operations.Operation] = [
        _operations.Write(items=(_operations.Item(("apple",), "fact", (), 1, None, None),)),
        _operations.Search(("apple",), " ", 1, None, None, 10, False, False),
    ]
    with pytest.raises(KitRuleViolation) as caught:
        await differential._run_against_reference(_OneLocation(store), operations)
    assert caught.value.rule == rule
    assert words in str(caught.value)
