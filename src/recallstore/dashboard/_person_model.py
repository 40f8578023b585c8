"""What the person page shows of one scope: read from the store, then arranged.

Everything memory holds for the records whose scope contains the pairs: the profile
tier, the valid records by kind, a timeline by the day things were said
(``observed_at``) with saves and supersedes marked, the supersede chains, the plans
that touched them and their events among those the lens holds. With an ``as_of``
instant, "valid" is judged then (the store's ``as_of``, S20) and what changed since
is listed. Reads go to the store underneath the observed one: looking is no memory
event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from recallstore.consolidation import read_kept_plans
from recallstore.events import EventBus, MemoryEvent
from recallstore.jsonl import iter_records
from recallstore.records import MAX_LIMIT, MEMORY_KINDS, MemoryRecord, MemorySearchQuery
from recallstore.store import REVISE_EXTENSION, MemoryStore, scope_matches

__all__ = ["Person", "TimelineDay", "TimelineEntry", "read_person"]

MAX_EVENTS = 50
"""Events the person page lists, the newest."""
_MAX_CHAIN = 50


def day_of(moment: datetime) -> str:
    """``2026-11-01``: the UTC day of ``moment``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class TimelineEntry:
    """One record on the timeline: the record, and what it superseded (ids)."""

    record: MemoryRecord
    supersedes: tuple[str, ...]


@dataclass(frozen=True)
class TimelineDay:
    """The records said on one day (UTC), oldest first."""

    day: str
    entries: tuple[TimelineEntry, ...]


@dataclass
class Person:
    """Everything the person page shows (see the module)."""

    scope: dict[str, str]
    records: list[MemoryRecord]
    """Every record of the scope, every status, oldest first."""
    valid: list[MemoryRecord]
    """Valid now, or at ``as_of`` when given, newest first."""
    as_of: datetime | None = None
    timeline: list[TimelineDay] = field(default_factory=list)
    chains: list[list[MemoryRecord]] = field(default_factory=list)
    plans: list[dict[str, Any]] = field(default_factory=list)
    events: list[MemoryEvent] = field(default_factory=list)
    saved_since: list[MemoryRecord] = field(default_factory=list)
    """With ``as_of``: records saved after it."""
    ended_since: list[MemoryRecord] = field(default_factory=list)
    """With ``as_of``: records valid then and not now (superseded, invalidated, expired)."""

    @property
    def profile(self) -> list[MemoryRecord]:
        """The profile tier: the valid ``profile`` records."""
        return [record for record in self.valid if record.kind == "profile"]

    @property
    def by_kind(self) -> list[tuple[str, list[MemoryRecord]]]:
        """The valid records grouped by kind, in the kinds' order, empty kinds left out."""
        groups = [(kind, [r for r in self.valid if r.kind == kind]) for kind in MEMORY_KINDS]
        return [(kind, records) for kind, records in groups if records]


async def read_person(
    store: MemoryStore,
    bus: EventBus,
    scope: dict[str, str],
    *,
    now: datetime,
    as_of: datetime | None = None,
) -> Person:
    """Read and arrange what the person page shows of ``scope`` (never empty)."""
    records = [record async for record in iter_records(store, scope)]
    if as_of is None:
        valid = [record for record in records if record.status(now) == "valid"]
        valid.reverse()
    else:
        query = MemorySearchQuery(scope=scope, as_of=as_of, limit=MAX_LIMIT)
        valid = [hit.record for hit in await store.search(query)]
    person = Person(scope=scope, records=records, valid=valid, as_of=as_of)
    person.timeline = _timeline(records)
    person.chains = _chains(records)
    person.plans = await _plans(store, scope, {record.id for record in records})
    person.events = _events(bus, scope, {record.id for record in records})
    if as_of is not None:
        person.saved_since = [record for record in records if record.created_at > as_of]
        then = {record.id for record in valid}
        person.ended_since = [
            record for record in records if record.id in then and record.status(now) != "valid"
        ]
    return person


def _timeline(records: Sequence[MemoryRecord]) -> list[TimelineDay]:
    """Records by the day they were said, newest day first, each day oldest first."""
    supersedes: dict[str, list[str]] = {}
    for record in records:
        if record.superseded_by is not None:
            supersedes.setdefault(record.superseded_by, []).append(record.id)
    days: dict[str, list[TimelineEntry]] = {}
    for record in sorted(records, key=lambda r: (r.observed_at, r.created_at, r.id)):
        entry = TimelineEntry(record, tuple(supersedes.get(record.id, ())))
        days.setdefault(day_of(record.observed_at), []).append(entry)
    return [TimelineDay(day, tuple(entries)) for day, entries in sorted(days.items(), reverse=True)]


def _chains(records: Sequence[MemoryRecord]) -> list[list[MemoryRecord]]:
    """Every supersede chain among ``records`` of two links or more, oldest link first."""
    by_id = {record.id: record for record in records}
    successors = {r.id: r.superseded_by for r in records if r.superseded_by in by_id}
    succeeded = set(successors.values())
    chains = []
    for record in records:
        if record.id not in successors or record.id in succeeded:
            continue
        chain = [record]
        while (following := successors.get(chain[-1].id)) and len(chain) < _MAX_CHAIN:
            if following in {link.id for link in chain}:
                break
            chain.append(by_id[following])
        chains.append(chain)
    return chains


async def _plans(store: MemoryStore, scope: dict[str, str], ids: set[str]) -> list[dict[str, Any]]:
    """The kept plans whose scope lies in ``scope`` or that name one of ``ids``."""
    if REVISE_EXTENSION not in store.capabilities().extensions:
        return []
    found = []
    for plan, revision in (await read_kept_plans(store)).plans:
        if not (scope_matches(plan.scope, scope) and plan.scope) and not (set(plan.records) & ids):
            continue
        found.append(
            {
                "id": plan.id,
                "applied_at": revision.created_at,
                "reverted_at": revision.reverted_at,
                "changes": len(plan.changes),
                "names": sorted(set(plan.records) & ids),
            }
        )
    return found


def _events(bus: EventBus, scope: dict[str, str], ids: set[str]) -> list[MemoryEvent]:
    """The newest events the lens holds whose scope lies in ``scope`` or that name one
    of ``ids``, newest first."""
    found = []
    for event in bus.replay():
        data = event.data.model_dump()
        named = {
            str(record_id)
            for key in ("record_ids", "superseded_ids", "result_ids")
            for record_id in data.get(key) or ()
        }
        if scope_matches(event.scope, scope) or named & ids:
            found.append(event)
    found.sort(key=lambda event: (event.timestamp, event.id), reverse=True)
    return found[:MAX_EVENTS]
