"""The records a write creates, built from validated inputs without validating twice."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

from recallstore.records import MemoryRecord, MemoryWriteInput
from recallstore.store.observed import check_observed_at, observed_at_saved
from recallstore.values import FIRST_YEAR, is_valid_record_id


def record_from_input(inp: MemoryWriteInput, *, record_id: str, now: datetime) -> MemoryRecord:
    """The record a backend stores for ``inp``: created and updated at ``now`` (S2).

    ``inp`` was validated when it was made, so with a storable id and a UTC ``now``
    the record is assembled without validating the same fields again; anything else
    takes the validating path.
    """
    check_observed_at(inp.observed_at, now)
    if now.tzinfo is UTC and now.year >= FIRST_YEAR and is_valid_record_id(record_id):
        return _assembled(inp, record_id, now)
    # Not what a store hands in: the validating path, which normalises or refuses.
    dumped = inp.model_dump(exclude={"supersedes"})
    dumped["observed_at"] = observed_at_saved(inp.observed_at, now)
    return MemoryRecord.model_validate(
        {**dumped, "id": record_id, "created_at": now, "updated_at": now}
    )


def records_from_inputs(
    inputs: Sequence[MemoryWriteInput], ids: Sequence[str], stamps: Sequence[datetime]
) -> list[MemoryRecord]:
    """:func:`record_from_input` for each input, with the id and the stamp at its
    position (what :func:`ids_from` and :meth:`MonotonicClock.readings` give a batch)."""
    return NewRecords(inputs, ids, stamps).records()


class NewRecords:
    """The records a write creates, before they are built: the inputs, an id and a
    stamp each. :meth:`records` builds them, once.

    A backend can store the batch from these three (``ids`` and ``stamps`` hold what
    the records will) and build the records it returns while its commit waits on the
    disk. With a storable id and a UTC stamp each (what a store's id source and clock
    give) building cannot fail; anything else is built, and validated, at once. The
    inputs are read twice, for the rows and for the records, so they must not be
    changed in place (a scope dict, a payload) until the write returns.
    """

    __slots__ = ("_records", "ids", "inputs", "stamps")

    def __init__(
        self, inputs: Sequence[MemoryWriteInput], ids: Sequence[str], stamps: Sequence[datetime]
    ) -> None:
        if not len(inputs) == len(ids) == len(stamps):
            raise ValueError(
                f"a batch of new records needs an id and a stamp per input: {len(inputs)} "
                f"inputs, {len(ids)} ids, {len(stamps)} stamps"
            )
        self.inputs = inputs
        self._records: list[MemoryRecord] | None = None
        if all(now.tzinfo is UTC and now.year >= FIRST_YEAR for now in stamps) and all(
            map(is_valid_record_id, ids)
        ):
            self.ids, self.stamps = ids, stamps
            return
        built = [
            record_from_input(inp, record_id=record_id, now=now)
            for inp, record_id, now in zip(inputs, ids, stamps, strict=True)
        ]
        self._records = built
        self.ids = [record.id for record in built]
        self.stamps = [record.created_at for record in built]

    @property
    def built(self) -> bool:
        """Whether :meth:`records` has nothing left to build."""
        return self._records is not None

    def records(self) -> list[MemoryRecord]:
        """The records, built on the first call."""
        if self._records is None:
            self._records = [
                _assembled(*given) for given in zip(self.inputs, self.ids, self.stamps, strict=True)
            ]
        return self._records


def _assembled(inp: MemoryWriteInput, record_id: str, now: datetime) -> MemoryRecord:
    """The record for ``inp`` built from its validated fields, with a valid id and a
    UTC ``now`` (checked by the callers)."""
    given = inp.__dict__
    payload = given["payload"]
    # One dict literal in the model's field order (what model_construct builds, without
    # its per-field loop). Frozen models, but scope and a dict or list payload are
    # mutable containers: the record gets its own.
    fields = {
        "scope": dict(given["scope"]),
        "kind": given["kind"],
        "content": given["content"],
        "tags": given["tags"],
        "provenance": given["provenance"],
        "expires_at": given["expires_at"],
        "target": given["target"],
        "payload": payload
        if payload is None or not isinstance(payload, dict | list)
        else copy.deepcopy(payload),
        "supports": given["supports"],
        "idempotency_key": given["idempotency_key"],
        "id": record_id,
        "created_at": now,
        "updated_at": now,
        "invalid_at": None,
        "invalid_reason": None,
        "superseded_by": None,
        "observed_at": observed_at_saved(given["observed_at"], now),
    }
    return MemoryRecord.trusted(fields, _FIELDS_SET)


_FIELDS_SET: Final = frozenset(MemoryRecord.model_fields) - {
    "invalid_at",
    "invalid_reason",
    "superseded_by",
}
"""The fields a validated new record was given (its ``model_fields_set``)."""
