"""Differential test: random operation sequences against the backend and the reference.

Hypothesis generates sequences of writes (with and without ``supersedes``),
invalidations, deletions, gets and searches over a small vocabulary, and runs each
sequence against the backend under test and a fresh ``InMemoryMemoryStore``. Ids
differ between the two stores, so records are compared through "handles" (the order
in which they were created). Listings must match exactly, order included; keyword
queries must match the same set of records (ranking may legitimately differ; for
backends whose search is not "keyword" only the result count is bounded); error
outcomes must match too.

Every example starts from an empty backend: the kit deletes whatever an earlier
example left at the factory's location, using only the protocol, and fails with the
rule it implies when that does not work (a ``delete`` that forgets nothing, a ``{}``
listing that misses records). Hypothesis only generates the sequences (no example
database, so nothing is written into your project); the first failing sequence is
shortened by the kit within ``differential_shrink_seconds`` and reported with the
rule its first divergence points to. The examples run on a thread of their own, each
in a fresh event loop, so the kit's time limit holds even for a store that hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.configuration import set_hypothesis_home_dir, storage_directory

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.errors import MemoryConflictError, MemoryNotFoundError
from recallstore.records import (
    MAX_LIMIT,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
)
from recallstore.store import MemoryStore, utc_now
from recallstore.testing._divergence import (
    leftover_violation,
    outcome_violation,
    raised_violation,
    search_violation,
)
from recallstore.testing._harness import StoreFactory, StoreHarness, every_record
from recallstore.testing._operations import (
    MISSING_ID,
    OPERATIONS,
    SCOPE_FILTERS,
    SCOPES,
    Delete,
    Get,
    Invalidate,
    Item,
    Operation,
    Search,
    Write,
)
from recallstore.testing._rules import KitRuleViolation, kit_test

__all__ = ["DifferentialConformance"]


class DifferentialConformance(StoreHarness):
    """Random operation sequences give the same results as the in-memory reference."""

    @kit_test(
        "the first step where the store and the reference disagree names the rule; "
        "the minimal sequence below replays it"
    )
    async def test_s1_to_s12_differential_random_operations_match_the_reference(
        self, store_factory: StoreFactory
    ) -> None:
        # Leave the thread a little time to report a precise timeout before the kit's own.
        budget = max(float(self.kit_time_limit) - 5.0, 1.0)
        await _in_a_thread(
            lambda: _explore(
                store_factory,
                examples=int(self.differential_examples),
                shrink_seconds=float(self.differential_shrink_seconds),
                deadline=time.monotonic() + budget,
            )
        )


async def _in_a_thread(work: Callable[[], None]) -> None:
    """Run ``work`` on a daemon thread (a hung store cannot keep the process alive)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle(error: BaseException | None) -> None:
        if done.done():
            return
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)

    def target() -> None:
        try:
            work()
        except BaseException as error:  # handed to the awaiting test, which re-raises it
            loop.call_soon_threadsafe(settle, error)
        else:
            loop.call_soon_threadsafe(settle, None)

    threading.Thread(target=target, name="recallstore-differential", daemon=True).start()
    await done


def _explore(
    factory: StoreFactory, *, examples: int, shrink_seconds: float, deadline: float
) -> None:
    """Generate ``examples`` sequences; shrink and raise the first one that diverges."""
    found: list[tuple[list[Operation], KitRuleViolation]] = []

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(operations=OPERATIONS)
    def check(operations: list[Operation]) -> None:
        if found:
            return  # the rest of the run is cheap once a failure is known
        try:
            _replay(factory, operations, deadline)
        except KitRuleViolation as violation:
            found.append((operations, violation))

    with _hypothesis_files_elsewhere():
        check()
    if not found:
        return
    operations, violation = found[0]
    shrink_until = min(time.monotonic() + shrink_seconds, deadline)
    operations, violation = _shrink(factory, operations, violation, shrink_until, deadline)
    steps = "\n".join(f"  step {n}: {operation}" for n, operation in enumerate(operations))
    raise KitRuleViolation(
        violation.rule,
        violation.hint + " (differential test)",
        f"{violation.detail}\nshortest failing sequence found ({len(operations)} steps):\n" + steps,
    )


@contextlib.contextmanager
def _hypothesis_files_elsewhere() -> Iterator[None]:
    """Keep hypothesis's caches out of the author's project while the kit runs.

    Even without an example database, hypothesis caches constants it reads from local
    modules under ``.hypothesis/`` in the working directory. The kit points it at a
    temporary directory for its own run and restores the author's setting afterwards.
    """
    previous = storage_directory(intent_to_write=False).home_directory
    with tempfile.TemporaryDirectory(prefix="recallstore-kit-") as scratch:
        set_hypothesis_home_dir(scratch)
        try:
            yield
        finally:
            set_hypothesis_home_dir(previous)


def _replay(factory: StoreFactory, operations: Sequence[Operation], deadline: float) -> None:
    """Run one sequence in a fresh event loop; a store that hangs fails it at ``deadline``."""

    async def bounded() -> None:
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                await _run_against_reference(factory, operations)
        except TimeoutError:
            raise KitRuleViolation(
                "S1",
                "the differential test ran out of time (the kit's time limit)",
                "a store call did not return; raise kit_time_limit if your store is merely slow",
            ) from None

    asyncio.run(bounded())


def _shrink(
    factory: StoreFactory,
    operations: list[Operation],
    violation: KitRuleViolation,
    until: float,
    deadline: float,
) -> tuple[list[Operation], KitRuleViolation]:
    """Drop chunks of steps while the sequence still fails, until ``until`` (a budget)."""
    chunk = max(len(operations) // 2, 1)
    while chunk >= 1 and time.monotonic() < until:
        start = 0
        while start < len(operations) and time.monotonic() < until:
            candidate = operations[:start] + operations[start + chunk :]
            try:
                _replay(factory, candidate, deadline)
            except KitRuleViolation as smaller:
                if smaller.rule == violation.rule:
                    operations, violation = candidate, smaller
                    continue
            start += chunk
        chunk //= 2
    return operations, violation


async def _run_against_reference(factory: StoreFactory, operations: Sequence[Operation]) -> None:
    """Apply ``operations`` to a store from ``factory`` and to the reference; assert they agree."""
    async with factory() as backend, InMemoryMemoryStore() as reference:
        cleaned = await _empty(backend)
        pair = _Pair(backend, reference, cleaned)
        for step, operation in enumerate(operations):
            await pair.apply(operation, step)


_CLEANUP_ROUNDS = 5


async def _empty(store: MemoryStore) -> set[str]:
    """Delete every record a previous example left behind; return the ids deleted.

    Bounded: a ``delete`` that forgets nothing, or a listing that keeps returning
    records, fails here with the rule it implies instead of looping forever.
    """
    deleted: set[str] = set()
    for _ in range(_CLEANUP_ROUNDS):
        records = await every_record(store)
        if not records:
            return deleted
        for record in records:
            if record.id in deleted:
                raise KitRuleViolation(
                    "S5",
                    "store not empty after deleting every listed record — S5 delete "
                    "(or S7 {} listing)",
                    f"record {record.id!r} was deleted while cleaning up between examples, "
                    "yet a listing with scope={} still returns it",
                )
            await store.delete(record.id)
            if await store.get(record.id) is not None:
                raise KitRuleViolation(
                    "S5",
                    "store not empty after deleting every listed record — S5 delete",
                    f"delete({record.id!r}) returned, but get() still returns the record",
                )
            deleted.add(record.id)
    raise KitRuleViolation(
        "S5",
        "store not empty after deleting every listed record — S5 delete or S7 {} listing",
        f"after {_CLEANUP_ROUNDS} rounds of deleting every record a scope={{}} listing "
        "returned, the listing still returns records",
    )


class _Side:
    """One store plus the mapping between its ids and the shared handles."""

    def __init__(self, store: MemoryStore, cleaned: set[str] | None = None) -> None:
        self.store = store
        self.ids: list[str] = []
        self.handle_of: dict[str, int] = {}
        self.cleaned = cleaned or set()

    def resolve(self, handle: int) -> str:
        return self.ids[handle % len(self.ids)] if self.ids else MISSING_ID

    def register(self, records: Sequence[MemoryRecord]) -> None:
        for record in records:
            self.handle_of[record.id] = len(self.ids)
            self.ids.append(record.id)

    def normalise(self, record: MemoryRecord) -> dict[str, Any]:
        """The record with ids replaced by handles and timestamps by the facts that matter."""
        if record.id not in self.handle_of:
            raise leftover_violation(record, self.cleaned)
        return {
            "handle": self.handle_of[record.id],
            "content": record.content,
            "scope": record.scope,
            "kind": record.kind,
            "tags": record.tags,
            "expires_at": record.expires_at,
            "invalid": record.invalid_at is not None,
            "invalid_reason": record.invalid_reason,
            "superseded_by": (
                None
                if record.superseded_by is None
                else self.handle_of.get(record.superseded_by, f"unknown {record.superseded_by}")
            ),
            "fresh": record.created_at == record.updated_at,
        }


class _Pair:
    def __init__(self, backend: MemoryStore, reference: MemoryStore, cleaned: set[str]) -> None:
        self.backend = _Side(backend, cleaned)
        self.reference = _Side(reference)
        self.keyword_backend = backend.capabilities().search == "keyword"
        now = utc_now()
        self.expiry: dict[str | None, datetime | None] = {
            None: None,
            "past": now - timedelta(hours=1),
            "future": now + timedelta(hours=1),
        }

    async def apply(self, operation: Operation, step: int) -> None:
        where = f"step {step}: {operation}"
        try:
            if isinstance(operation, Search):
                await self._search(operation, where)
                return
            expected = await self._outcome(self.reference, operation)
            actual = await self._outcome(self.backend, operation)
        except KitRuleViolation:
            raise
        except Exception as exc:
            raise raised_violation(operation, where, exc) from exc
        if actual != expected:
            raise outcome_violation(operation, where, expected, actual)

    async def _outcome(self, side: _Side, operation: Operation) -> object:
        try:
            if isinstance(operation, Write):
                inputs = [self._input(side, item) for item in operation.items]
                records = await side.store.write(inputs)
                side.register(records)
                targets = [inp.supersedes for inp in inputs if inp.supersedes is not None]
                return {
                    "written": [side.normalise(record) for record in records],
                    "superseded": [await self._state(side, target) for target in targets],
                }
            if isinstance(operation, Invalidate):
                await side.store.invalidate(side.resolve(operation.handle), operation.reason)
                return await self._state(side, side.resolve(operation.handle))
            if isinstance(operation, Delete):
                await side.store.delete(side.resolve(operation.handle))
                return await self._state(side, side.resolve(operation.handle))
            if isinstance(operation, Get):
                return await self._state(side, side.resolve(operation.handle))
        except (MemoryNotFoundError, MemoryConflictError) as exc:
            return type(exc).__name__
        raise AssertionError(f"unknown operation {operation!r}")

    async def _state(self, side: _Side, record_id: str) -> object:
        record = await side.store.get(record_id)
        return None if record is None else side.normalise(record)

    def _input(self, side: _Side, item: Item) -> MemoryWriteInput:
        return MemoryWriteInput(
            scope=SCOPES[item.scope],
            kind=item.kind,
            content=" ".join(item.words),
            tags=item.tags,
            expires_at=self.expiry[item.expiry],
            supersedes=None if item.supersedes is None else side.resolve(item.supersedes),
        )

    async def _search(self, operation: Search, where: str) -> None:
        text = None if operation.words is None else operation.separator.join(operation.words)
        query = MemorySearchQuery(
            query=text,
            scope=SCOPE_FILTERS[operation.scope],
            kinds=operation.kinds,
            tags=operation.tags,
            limit=operation.limit,
            include_invalidated=operation.include_invalidated,
            include_expired=operation.include_expired,
        )
        actual = [self.backend.normalise(h.record) for h in await self.backend.store.search(query)]
        every_match = query.model_copy(update={"limit": MAX_LIMIT})
        matches = [
            self.reference.normalise(h.record)
            for h in await self.reference.store.search(every_match)
        ]
        if query.is_listing:
            expected = matches[: query.limit]
            if actual != expected:
                raise search_violation(query, where, expected, actual, matches)
            return
        if not self.keyword_backend:
            # Semantic and hybrid backends may return other records; only bound the count.
            if len(actual) > query.limit:
                raise search_violation(query, where, matches[: query.limit], actual, matches)
            return
        # Ranking may differ between backends: compare against the full match set instead.
        by_handle = {record["handle"]: record for record in matches}
        agrees = (
            len(actual) == min(query.limit, len(matches))
            and len({record["handle"] for record in actual}) == len(actual)
            and [by_handle.get(record["handle"]) for record in actual] == actual
        )
        if not agrees:
            raise search_violation(query, where, matches[: query.limit], actual, matches)
