"""A new record's ``observed_at``: refused when it lies in the future, else as saved.

Re-exported by ``recallstore.store`` (backends check a write's inputs through
``backends._time_filters``, and ``record_from_input`` checks its own; the rule is in
docs/store-protocol.md).
"""

from __future__ import annotations

from datetime import datetime

from recallstore.errors import MemoryValidationError
from recallstore.records import MAX_OBSERVED_SKEW, format_timestamp

__all__ = ["check_observed_at", "observed_at_saved"]


def check_observed_at(
    observed_at: datetime | None, now: datetime, field: str = "observed_at"
) -> None:
    """Refuse an ``observed_at`` more than ``MAX_OBSERVED_SKEW`` after ``now`` (the
    store's clock), a memory of the future: :class:`MemoryValidationError` on ``field``."""
    if observed_at is not None and observed_at > now + MAX_OBSERVED_SKEW:
        raise MemoryValidationError(
            field,
            f"{format_timestamp(observed_at)} is in the future (the store's clock reads "
            f"{format_timestamp(now)}; at most {MAX_OBSERVED_SKEW} of clock skew is allowed)",
            observed_at,
        )


def observed_at_saved(observed_at: datetime | None, now: datetime) -> datetime:
    """A new record's ``observed_at``: as given, or ``now`` when none is given or it lies
    after ``now`` (within ``MAX_OBSERVED_SKEW``, which the store checked)."""
    return now if observed_at is None or observed_at > now else observed_at
