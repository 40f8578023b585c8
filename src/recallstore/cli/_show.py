"""``recallstore show ID``: one record, the consolidations that touched it, its chain."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from recallstore._command.database import open_store, parse_scope
from recallstore.chain import supersede_chain
from recallstore.cli._output import one_line, said_columns, scope_column, status_of
from recallstore.cli._records import get_in_scope, print_json, print_text
from recallstore.consolidation import read_kept_plans
from recallstore.records import MemoryRecord, format_timestamp
from recallstore.store import REVISE_EXTENSION, MemoryStore, SupportsRevise

__all__ = ["Consolidation", "consolidations_of", "invalidation_chain", "run_show"]


@dataclass(frozen=True, slots=True)
class Consolidation:
    """One change of an applied (or since reverted) consolidation plan that names the
    record shown: the record it invalidated, or the one it kept in that one's place."""

    plan: str
    applied_at: datetime
    reverted_at: datetime | None
    action: str
    """``supersede`` or ``duplicate``."""
    record_id: str
    """The record the change invalidated."""
    target_id: str
    """The record it kept valid in its place."""
    reason: str
    """The reason the proposer gave (withheld once a record it names was forgotten)."""

    def sentence(self, shown: str) -> str:
        """``this record is a duplicate of 01…`` or ``01… was superseded by this record``:
        the change, with ``shown`` (the record on screen) called "this record"."""
        verb = "was superseded by" if self.action == "supersede" else "is a duplicate of"

        def name(record_id: str) -> str:
            return "this record" if record_id == shown else record_id

        return f"{name(self.record_id)} {verb} {name(self.target_id)}"

    def as_json(self) -> dict[str, Any]:
        """The JSON ``show --json`` prints for it."""
        return {
            "plan": self.plan,
            "applied_at": format_timestamp(self.applied_at),
            "reverted_at": None if self.reverted_at is None else format_timestamp(self.reverted_at),
            "action": self.action,
            "record_id": self.record_id,
            "target_id": self.target_id,
            "reason": self.reason,
        }


async def consolidations_of(store: MemoryStore, record: MemoryRecord) -> list[Consolidation]:
    """The changes of the plans the store keeps (applied or reverted, newest first) that
    invalidated ``record`` or kept it in another's place; none without ``"revise"``."""
    if REVISE_EXTENSION not in store.capabilities().extensions:
        return []
    found = []
    for plan, revision in (await read_kept_plans(store, record.scope)).plans:
        for op in plan.changes:
            if record.id in (op.record_id, op.target_id):
                found.append(
                    Consolidation(
                        plan=plan.id,
                        applied_at=revision.created_at,
                        reverted_at=revision.reverted_at,
                        action=op.action,
                        record_id=op.record_id,
                        target_id=op.target_id or "",
                        reason=op.reason,
                    )
                )
    return found


async def invalidation_chain(store: MemoryStore, record: MemoryRecord) -> list[MemoryRecord]:
    """The supersede chain through ``record``, oldest first (``record`` itself included).

    Every record of its scope is searched for predecessors; deleted links are left out.
    """
    chain = await supersede_chain(store, record, complete=True)
    return [link.record for link in chain.links if link.record is not None]


@dataclass(frozen=True, slots=True)
class _Shown:
    record: MemoryRecord
    chain: list[MemoryRecord]
    plan: str | None
    consolidations: list[Consolidation]


def run_show(args: argparse.Namespace) -> int:
    """``recallstore show ID``: one record, its consolidations and its invalidation chain."""
    scope = parse_scope(args.scope)

    async def go() -> _Shown:
        async with open_store(args.db, must_exist=True, read_only=True) as store:
            record = await get_in_scope(store, args.id, scope)
            return _Shown(
                record,
                await invalidation_chain(store, record),
                await _revised_by(store, record),
                await consolidations_of(store, record),
            )

    shown = asyncio.run(go())
    record = shown.record
    if args.json:
        print_json(
            {
                "record": record.model_dump(mode="json"),
                "chain": [item.model_dump(mode="json") for item in shown.chain],
                "plan": shown.plan,
                "consolidations": [item.as_json() for item in shown.consolidations],
            }
        )
        return 0
    _print_record(record, shown.plan)
    if shown.consolidations:
        print("\nconsolidations (newest first):")
        for change in shown.consolidations:
            state = f"applied {_stamp(change.applied_at)}"
            if change.reverted_at is not None:
                state += f", reverted {_stamp(change.reverted_at)}"
            print_text(f"  {change.plan}  {state}")
            print_text(f"    {change.sentence(record.id)}")
            print_text(f"    because: {change.reason}")
    if len(shown.chain) > 1:
        print("\nchain (oldest first):")
        for item in shown.chain:
            marker = "*" if item.id == record.id else " "
            print_text(
                f"  {marker} {item.id}  {status_of(item):<11}  {said_columns(item)}  "
                f"{one_line(item.content, 60)}"
            )
    return 0


def _stamp(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def _revised_by(store: MemoryStore, record: MemoryRecord) -> str | None:
    """The id of the applied consolidation plan (a kept revision) that invalidated
    ``record``, or None: read from the revisions the store keeps, not from the reason."""
    if record.invalid_at is None or REVISE_EXTENSION not in store.capabilities().extensions:
        return None
    revising = cast(SupportsRevise, store)
    for revision in await revising.revisions(record.scope):  # newest first
        if revision.reverted_at is None and any(u.id == record.id for u in revision.undo):
            return revision.id
    return None


def _print_record(record: MemoryRecord, plan: str | None = None) -> None:
    status = status_of(record)
    if record.superseded_by is not None:
        status += f" by {record.superseded_by} at {_stamp(record.invalid_at)}"
    elif record.invalid_at is not None:
        status += f" at {_stamp(record.invalid_at)}"
    provenance = "-"
    if record.provenance is not None:
        parts = record.provenance.model_dump(exclude_none=True)
        provenance = " ".join(f"{key}={value}" for key, value in parts.items()) or "-"
    rows = [
        ("id", record.id),
        ("kind", record.kind),
        ("scope", scope_column(record.scope)),
        ("status", status),
        *([("reason", record.invalid_reason)] if record.invalid_reason else []),
        *([("plan", _plan_row(plan, record.scope))] if plan else []),
        ("said", _stamp(record.observed_at)),
        ("created", _stamp(record.created_at)),
        ("updated", _stamp(record.updated_at)),
        ("expires", _stamp(record.expires_at)),
        ("tags", ", ".join(record.tags) or "-"),
        ("provenance", provenance),
    ]
    if record.target is not None:
        rows.append(("target", json.dumps(record.target.model_dump(mode="json"))))
    if record.payload is not None:
        rows.append(("payload", json.dumps(record.payload, ensure_ascii=False)))
    for label, value in rows:
        print_text(f"{label + ':':<12}{value}")
    print("content:")
    for line in record.content.splitlines():
        print_text(f"  {line}")


def _plan_row(plan: str, scope: dict[str, str]) -> str:
    flags = " ".join(f"--scope {shlex.quote(f'{key}={value}')}" for key, value in scope.items())
    return f"{plan} (undo: recallstore consolidate {flags} --revert {plan})"
