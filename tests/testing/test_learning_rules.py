"""Kit rules S25–S28 bite: backends that corroborate, promote or keep the ledger wrongly fail.

Each broken backend is a bundled one with one step of the ``"promote"`` extension
(issue 39) taken out or bent; the same kit tests pass on the real backends (their
conformance runs, and the last test here).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.postgres_server import postgres_schema, postgres_url

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemoryRecord, MemoryTarget, Provenance
from recallstore.store import (
    Corroboration,
    LedgerEntry,
    MemoryStore,
    Promotion,
    PromotionGate,
)
from recallstore.testing.learning import LearningConformance

__all__ = ["postgres_schema", "postgres_url"]

_Rule = Callable[[LearningConformance, MemoryStore], Awaitable[None]]


class CopiesInsteadOfCorroborating(InMemoryMemoryStore):
    """Writes the lesson again, as a second record, instead of adding evidence."""

    async def corroborate(
        self,
        scope: Mapping[str, str],
        id: str,
        evidence: Provenance,
        *,
        actor: str,
        reason: str,
    ) -> MemoryRecord:
        from recallstore.records import MemoryWriteInput

        record = await self.get(id)
        assert record is not None
        (copy,) = await self.write(
            [MemoryWriteInput(scope=dict(scope), content=record.content, provenance=evidence)]
        )
        return copy


class IgnoresTheGate(InMemoryMemoryStore):
    """Promotes whatever it is asked to, whatever the host's gate says."""

    async def promote(
        self,
        scope: Mapping[str, str],
        id: str,
        target: MemoryTarget,
        *,
        gate: PromotionGate,
        actor: str,
        reason: str,
        approved_by: str | None = None,
    ) -> Promotion:
        anything = PromotionGate(
            min_supports=1, min_conversations=1, approval_for=frozenset(), kinds=None
        )
        return await super().promote(
            scope, id, target, gate=anything, actor=actor, reason=reason, approved_by=approved_by
        )


class SqliteDropsTheEvidence(SqliteMemoryStore):
    """Keeps the ledger row of a corroboration but never stores the evidence."""

    async def _set_supports(self, handle: Any, *arguments: Any) -> None:
        return None


class SqliteLedgersNoCorroboration(SqliteMemoryStore):
    """Adds the evidence but writes no ledger row for it."""

    async def _append_ledger(self, handle: Any, entry: LedgerEntry) -> None:
        if entry.action != "corroborate":
            await super()._append_ledger(handle, entry)


class PostgresLeaksPromotions(PostgresMemoryStore):
    """Lists the promotions of every scope, whatever scope it is asked for."""

    async def promotions(self, scope: Mapping[str, str]) -> list[Promotion]:
        found: list[Promotion] = []
        for other in ({"tenant": "acme", "user": "ana"}, {"tenant": "acme", "user": "bo"}):
            found += await super().promotions(other)
        return found


class PostgresDemotesNothing(PostgresMemoryStore):
    """Answers a demote but keeps the record promoted (no demote row)."""

    async def _append_ledger(self, handle: Any, entry: LedgerEntry) -> None:
        if entry.action != "demote":
            await super()._append_ledger(handle, entry)


class ForgetsWhatSupportsWere(InMemoryMemoryStore):
    """Keeps no ``supports_before`` on its rows, so a withdrawal only drops the evidence
    and leaves the provenance a corroborate listed."""

    async def _append_ledger(self, handle: None, entry: LedgerEntry) -> None:
        await super()._append_ledger(handle, replace(entry, supports_before=None))


class SqliteCorroboratesOneByOne(SqliteMemoryStore):
    """Lands a batch one corroboration at a time: a refused item leaves the earlier ones."""

    async def corroborate_all(
        self, scope: Mapping[str, str], items: Sequence[Corroboration], *, actor: str
    ) -> list[MemoryRecord]:
        return [
            await self.corroborate(scope, i.record_id, i.evidence, actor=actor, reason=i.reason)
            for i in items
        ]


class PostgresWithdrawsWithoutARow(PostgresMemoryStore):
    """Takes the evidence back but keeps no ``withdraw`` row."""

    async def _append_ledger(self, handle: Any, entry: LedgerEntry) -> None:
        if entry.action != "withdraw":
            await super()._append_ledger(handle, entry)


async def _run(rule: _Rule, factory: Callable[[], MemoryStore]) -> None:
    async with factory() as store:
        await rule(LearningConformance(), store)


_KIT_FAILURE = (AssertionError, pytest.fail.Exception)
"""What a failing kit test raises: an assertion, or ``pytest.fail`` (a missed raise)."""


async def _bites(rule: _Rule, factory: Callable[[], MemoryStore], prefix: str) -> None:
    with pytest.raises(_KIT_FAILURE) as caught:
        await _run(rule, factory)
    assert str(caught.value).startswith(f"{prefix} — "), str(caught.value)


def _corroborates(kit: LearningConformance, store: MemoryStore) -> Awaitable[None]:
    return kit.test_s25_corroborate_adds_evidence_to_one_record(learning_store=store)


def _withdraws(kit: LearningConformance, store: MemoryStore) -> Awaitable[None]:
    return kit.test_s28_withdraw_restores_supports_exactly(learning_store=store)


def _batches(kit: LearningConformance, store: MemoryStore) -> Awaitable[None]:
    return kit.test_s28_batches_land_whole_or_not_at_all(learning_store=store)


def _gate_holds(kit: LearningConformance, store: MemoryStore) -> Awaitable[None]:
    return kit.test_s26_the_gate_holds(learning_store=store)


def _promotes_and_demotes(kit: LearningConformance, store: MemoryStore) -> Awaitable[None]:
    return kit.test_s26_promote_then_demote(learning_store=store)


async def test_s25_fails_a_store_that_copies_instead_of_corroborating() -> None:
    await _bites(_corroborates, CopiesInsteadOfCorroborating, "S25")


async def test_s26_fails_a_store_that_ignores_the_gate() -> None:
    await _bites(_gate_holds, IgnoresTheGate, "S26")


@pytest.mark.parametrize("mutant", [SqliteDropsTheEvidence, SqliteLedgersNoCorroboration])
async def test_s25_fails_a_sqlite_store_that_loses_evidence_or_its_row(
    tmp_path: Path, mutant: type[SqliteMemoryStore]
) -> None:
    await _bites(_corroborates, lambda: mutant(tmp_path / "memory.db"), "S25")


async def test_s27_fails_a_sqlite_store_that_ledgers_no_corroboration(tmp_path: Path) -> None:
    factory = lambda: SqliteLedgersNoCorroboration(tmp_path / "memory.db")  # noqa: E731
    with pytest.raises(_KIT_FAILURE) as caught:
        await LearningConformance().test_s27_the_ledger_says_who_when_why_and_the_evidence(
            store_factory=factory
        )
    assert str(caught.value).startswith("S27 — "), str(caught.value)


@pytest.mark.parametrize("mutant", [PostgresLeaksPromotions, PostgresDemotesNothing])
async def test_s26_fails_a_postgres_store_that_leaks_or_keeps_promotions(
    postgres_url: str, postgres_schema: str, mutant: type[PostgresMemoryStore]
) -> None:
    await _bites(_promotes_and_demotes, lambda: mutant(postgres_url, schema=postgres_schema), "S26")


async def test_s28_fails_a_store_that_forgets_what_supports_were() -> None:
    await _bites(_withdraws, ForgetsWhatSupportsWere, "S28")


async def test_s28_fails_a_sqlite_store_that_corroborates_a_batch_one_by_one(
    tmp_path: Path,
) -> None:
    await _bites(_batches, lambda: SqliteCorroboratesOneByOne(tmp_path / "memory.db"), "S28")


async def test_s28_fails_a_postgres_store_that_withdraws_without_a_row(
    postgres_url: str, postgres_schema: str
) -> None:
    factory = lambda: PostgresWithdrawsWithoutARow(postgres_url, schema=postgres_schema)  # noqa: E731
    await _bites(_withdraws, factory, "S28")


async def test_the_same_rules_pass_on_the_bundled_backends(
    tmp_path: Path, postgres_url: str, postgres_schema: str
) -> None:
    factories: list[Callable[[], MemoryStore]] = [
        InMemoryMemoryStore,
        lambda: SqliteMemoryStore(tmp_path / "memory.db"),
        lambda: PostgresMemoryStore(postgres_url, schema=postgres_schema),
    ]
    for factory in factories:
        for rule in (_corroborates, _gate_holds, _promotes_and_demotes, _withdraws, _batches):
            store = factory()
            async with store:
                await rule(LearningConformance(), store)
                for scope in ({"user": "ana"}, {"user": "bo"}):
                    await store.forget(scope)  # type: ignore[attr-defined]
