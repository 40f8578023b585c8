"""Search hits built from records a backend read back: not validated again."""

from __future__ import annotations

from math import isfinite

from recallstore.records import MemoryHit, MemoryRecord

__all__ = ["scored_hit"]


def scored_hit(record: MemoryRecord, score: float) -> MemoryHit:
    """The hit of a stored ``record`` (built from its row) at ``score``. A finite score
    is the only thing to check, so nothing is validated again; a score that is not
    finite raises :class:`~recallstore.errors.MemoryValidationError`, naming it."""
    if isfinite(score):  # always, for a ranking's float
        return MemoryHit.trusted({"record": record, "score": float(score)})
    return MemoryHit(record=record, score=score)
