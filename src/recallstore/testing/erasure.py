"""S24: what ``delete`` and ``forget`` forget is gone from everything the store keeps.

Runs on stores whose ``capabilities().extensions`` declare ``"forget"``; the parts
about consolidation plans and the journal run where the store keeps them. Records
written with words, tags, payloads, keys, conversation and run ids found nowhere
else are named by an applied consolidation plan, journaled, searched (and embedded,
on a hybrid store), corroborated and promoted (supports and ledger rows, on a store with
the ``"promote"`` extension); then ``forget(scope)`` and ``delete(id)`` run, and the kit looks
for every one of those strings — and the forgotten scope's value, also as the hex
the bundled backends index scope pairs by — in what the store keeps:

* through the store's own calls: records, revisions, the ledger, the journal;
* in the raw storage, through the ``stored_bytes`` fixture: the bundled backends
  have one (:func:`stored_bytes_of`: the SQLite file with its ``-wal`` and ``-shm``,
  every table of the Postgres schema as text, the in-memory store's objects); a
  third-party backend overrides the fixture to return its own (None: the raw scan
  is skipped).

A plan that named a forgotten record must still be listed, revert what it can and
list the record in ``forgotten``.
"""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from recallstore.backends.journal import SupportsJournal
from recallstore.consolidation import (
    Operation,
    apply_plan,
    consolidate,
    kept_plans,
    revert_plan,
)
from recallstore.context import call_context
from recallstore.records import MemoryTarget, Provenance
from recallstore.store import (
    FORGET_EXTENSION,
    JOURNAL_EXTENSION,
    PROMOTE_EXTENSION,
    REVISE_EXTENSION,
    MemoryStore,
    PromotionGate,
    SupportsForget,
    SupportsPromotion,
)
from recallstore.testing._harness import StoreFactory, StoreHarness, memory, search
from recallstore.testing._rules import kit_test
from recallstore.testing.proposer import ScriptedProposer

__all__ = ["ErasureConformance", "StoredBytes", "stored_bytes_of"]

StoredBytes = Callable[[MemoryStore], Awaitable[bytes]]
"""Every byte a store keeps, for the raw scan (given the opened store)."""

_FORGOTTEN_USER = "qzforgetmeuser"
_ANA = {"tenant": "acme", "user": _FORGOTTEN_USER}
_BO = {"tenant": "acme", "user": "bo"}


def _secrets(prefix: str) -> dict[str, str]:
    """Strings one record holds and nothing else does, by where it holds them."""
    return {
        name: f"{prefix}{name}qz"
        for name in (
            "word",
            "tag",
            "payload",
            "key",
            "section",
            "conversation",
            "run",
            "support",
            "actor",
        )
    }


def _scope_value_forms(value: str) -> list[str]:
    """``value`` and the hex forms the bundled backends index scope pairs by."""
    hexed = value.encode().hex()
    return [value, hexed, hexed.upper()]


async def _write_secret(store: MemoryStore, scope: dict[str, str], secret: dict[str, str]) -> str:
    with call_context(conversation_id=secret["conversation"], run_id=secret["run"]):
        (record,) = await store.write(
            [
                memory(
                    f"the {secret['word']} is kept here",
                    scope=scope,
                    tags=[secret["tag"]],
                    payload={"note": secret["payload"]},
                    idempotency_key=secret["key"],
                    target=MemoryTarget(section=secret["section"]),
                    provenance=Provenance(
                        conversation_id=secret["conversation"], run_id=secret["run"]
                    ),
                )
            ]
        )
    return record.id


async def _learn_secret(
    store: MemoryStore, scope: dict[str, str], record_id: str, secret: dict[str, str]
) -> None:
    """Corroborate the record from a conversation found nowhere else (and once more,
    withdrawn), and promote it: supports and ledger rows (actor, reason, evidence, the
    supports before a change) that hold the secrets."""
    learning = cast(SupportsPromotion, store)
    evidence = Provenance(conversation_id=secret["support"], author=secret["actor"])
    with call_context(conversation_id=secret["support"]):
        await learning.corroborate(
            scope, record_id, evidence, actor=secret["actor"], reason=f"{secret['word']} again"
        )
        taken = Provenance(conversation_id=f"{secret['support']}-2", author=secret["actor"])
        await learning.corroborate(
            scope, record_id, taken, actor=secret["actor"], reason=f"{secret['word']} twice"
        )
        await learning.withdraw(  # a withdraw row keeps the supports it changed
            scope, record_id, taken, actor=secret["actor"], reason=f"{secret['word']} back"
        )
        await learning.promote(
            scope,
            record_id,
            MemoryTarget(section="background"),
            gate=PromotionGate(min_supports=1, min_conversations=1, approval_for=frozenset()),
            actor=secret["actor"],
            reason=f"because {secret['word']}",
        )


def _strings_of(value: Any, seen: set[int]) -> Iterator[str]:
    """Every string reachable from ``value`` (the in-memory store's raw scan)."""
    if isinstance(value, str):
        yield value
        return
    if isinstance(value, bytes | int | float | bool | type(None) | type) or id(value) in seen:
        return
    if callable(value):  # functions and methods hold code, not data
        return
    seen.add(id(value))
    children: list[Any] = []
    if isinstance(value, dict):
        children = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple | set | frozenset):
        children = list(value)
    elif is_dataclass(value):
        children = [getattr(value, f.name) for f in fields(value)]
    elif hasattr(value, "__dict__"):
        children = list(vars(value).values())
    for child in children:
        yield from _strings_of(child, seen)


async def stored_bytes_of(store: MemoryStore) -> bytes | None:
    """Every byte a bundled backend keeps for ``store``; None for another backend.

    SQLite: the database file, its ``-wal`` and ``-shm``. Postgres: every row of every
    table in the store's schema, as text. In memory: every string the store object
    reaches.
    """
    from recallstore.backends.memory import InMemoryMemoryStore
    from recallstore.backends.postgres import PostgresMemoryStore
    from recallstore.backends.sqlite import SqliteMemoryStore

    if isinstance(store, SqliteMemoryStore):
        path: Path = store.path
        return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))
    if isinstance(store, PostgresMemoryStore):
        return await _postgres_tables_text(store._dsn, store._schema)
    if isinstance(store, InMemoryMemoryStore):
        gc.collect()
        return "\n".join(_strings_of(vars(store), set())).encode("utf-8", "surrogatepass")
    return None


async def _postgres_tables_text(dsn: str, schema: str) -> bytes:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,),
        )
        tables = [str(row[0]) for row in await cursor.fetchall()]
        parts: list[str] = []
        for table in tables:
            # Names from the catalogue; quoted as identifiers.
            rows = await conn.execute(f'SELECT t::text FROM "{schema}"."{table}" AS t')
            parts.extend(str(row[0]) for row in await rows.fetchall())
    return "\n".join(parts).encode()


def _found(blob: bytes, needles: list[str]) -> list[str]:
    return [needle for needle in needles if needle.encode() in blob]


class ErasureConformance(StoreHarness):
    """``delete``/``forget`` leave nothing of what they forgot (S24)."""

    @pytest.fixture
    def stored_bytes(self) -> StoredBytes | None:
        """Override me for a third-party backend: return ``async def (store) -> bytes``
        giving every byte the store keeps (files, tables as text); None skips the raw
        scan. The default knows the bundled backends (:func:`stored_bytes_of`)."""

        async def bundled(store: MemoryStore) -> bytes:
            found = await stored_bytes_of(store)
            if found is None:
                pytest.skip("no raw scan for this backend: override the stored_bytes fixture")
            return found

        return bundled

    @kit_test(
        "after forget(scope) and delete(id) return, none of the forgotten records' text, "
        "tags, payload, keys, conversation or run ids, nor the forgotten scope's value, may "
        "be left in records, indexes, vectors, plans or the journal; plans list what was "
        "forgotten and revert the rest"
    )
    async def test_s24_forget_and_delete_leave_nothing(
        self, store_factory: StoreFactory, stored_bytes: StoredBytes | None
    ) -> None:
        probe = store_factory()
        if FORGET_EXTENSION not in probe.capabilities().extensions:
            pytest.skip("forget sub-suite; this store lacks the 'forget' extension")
        ana, deleted, kept = _secrets("anasec"), _secrets("delsec"), _secrets("keepsec")
        gone = [*ana.values(), *deleted.values(), *_scope_value_forms(_FORGOTTEN_USER)]
        async with probe as store:
            extensions = store.capabilities().extensions
            ana_ids = [await _write_secret(store, _ANA, ana)]
            with call_context(conversation_id=ana["conversation"], run_id=ana["run"]):
                ana_ids.append((await store.write([memory("anasecond fact", scope=_ANA)]))[0].id)
                await store.invalidate(ana_ids[1], f"because {ana['word']} said so")
                ana_ids.append((await store.write([memory("anathird fact", scope=_ANA)]))[0].id)
                await search(store, ana["word"], scope=_ANA)
            deleted_id = await _write_secret(store, _BO, deleted)
            kept_id = await _write_secret(store, _BO, kept)
            if PROMOTE_EXTENSION in extensions:
                await _learn_secret(store, _ANA, ana_ids[0], ana)
                await _learn_secret(store, _BO, deleted_id, deleted)
            bo_plan = ana_plan = None
            if REVISE_EXTENSION in extensions:
                ana_plan = await consolidate(
                    store,
                    _ANA,
                    proposers=[
                        ScriptedProposer(
                            [
                                Operation(
                                    action="duplicate",
                                    record_id=ana_ids[0],
                                    duplicate_of=ana_ids[2],
                                    reason=f"{ana['word']} again",
                                )
                            ]
                        )
                    ],
                )
                bo_plan = await consolidate(
                    store,
                    _BO,
                    proposers=[
                        ScriptedProposer(
                            [
                                Operation(
                                    action="supersede",
                                    record_id=kept_id,
                                    superseded_by=deleted_id,
                                    # Not quoting the deleted record: the reason
                                    # stays with the record it invalidates.
                                    reason="the newer statement",
                                )
                            ]
                        )
                    ],
                )
                assert await apply_plan(store, ana_plan) is not None
                assert await apply_plan(store, bo_plan) is not None
            journal = store if JOURNAL_EXTENSION in extensions else None
            if journal is not None:
                await cast(SupportsJournal, journal).flush_journal()
            with call_context(conversation_id=deleted["conversation"], run_id=deleted["run"]):
                await search(store, deleted["word"], scope=_BO)  # buffered, not yet written
            with call_context(conversation_id=ana["conversation"]):
                await search(store, "anything", scope=_ANA)

            assert await cast(SupportsForget, store).forget({"user": _FORGOTTEN_USER}) == 3
            await store.delete(deleted_id)

            for record_id in [*ana_ids, deleted_id]:
                assert await store.get(record_id) is None
            assert await store.get(kept_id) is not None
            if bo_plan is not None and ana_plan is not None:
                listed = {plan.id: plan for plan, _ in await kept_plans(store)}
                assert set(listed) == {ana_plan.id, bo_plan.id}, "a plan naming a forgotten record"
                assert listed[bo_plan.id].forgotten == (deleted_id,)
                assert set(listed[ana_plan.id].forgotten) == {ana_ids[0], ana_ids[2]}
                assert listed[ana_plan.id].scope == {}
                assert [p.id for p, _ in await kept_plans(store, _BO)] == [bo_plan.id]
                shown = "\n".join(plan.diff() + plan.model_dump_json() for plan in listed.values())
                assert _found(shown.encode(), gone) == [], "a plan keeps forgotten text"
                restored = await revert_plan(store, bo_plan.id)  # what it can: the kept record
                assert restored.forgotten == (deleted_id,)
                again = await store.get(kept_id)
                assert again is not None
                assert not again.is_invalidated
            if PROMOTE_EXTENSION in extensions:
                rows = await cast(SupportsPromotion, store).ledger()
                assert _found(repr(rows).encode(), gone) == [], "the ledger keeps a trace"
            if journal is not None:
                entries = await cast(SupportsJournal, journal).read_journal(limit=100_000)
                text = "\n".join(repr(entry.envelope) for entry in entries)
                assert _found(text.encode(), gone) == [], "the journal keeps a trace"
                await cast(SupportsJournal, journal).flush_journal()
            if stored_bytes is not None:
                blob = await stored_bytes(store)
                assert kept["word"].encode() in blob, "the raw scan must see what is kept"
                assert _found(blob, gone) == [], "the stored bytes keep a trace"
        if stored_bytes is not None and store.capabilities().durable:
            # Closing wrote what was buffered; reopened, nothing came back.
            async with store_factory() as reopened:
                blob = await stored_bytes(reopened)
                assert _found(blob, gone) == [], "the stored bytes keep a trace after closing"

    @kit_test(
        "forget(scope) must erase the scope's traces even when its records went one by one "
        "(delete) before it: the journal keeps no event of the forgotten scope"
    )
    async def test_s24_forget_erases_a_scope_whose_records_went_one_by_one(
        self, store_factory: StoreFactory
    ) -> None:
        async with store_factory() as store:
            extensions = store.capabilities().extensions
            if FORGET_EXTENSION not in extensions or JOURNAL_EXTENSION not in extensions:
                pytest.skip("forget and journal rule; this store lacks one of them")
            record_id = await _write_secret(store, _ANA, _secrets("onebyone"))
            await search(store, "anything", scope=_ANA)
            await store.delete(record_id)
            assert await cast(SupportsForget, store).forget({"user": _FORGOTTEN_USER}) == 0
            entries = await cast(SupportsJournal, store).read_journal(limit=100_000)
            text = "\n".join(repr(entry.envelope) for entry in entries)
            assert _FORGOTTEN_USER not in text, "the journal keeps the forgotten scope"
