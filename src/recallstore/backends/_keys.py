"""Idempotency keys (S16): what a key is, the batch's keys, and what a keyed write supersedes."""

from __future__ import annotations

from collections.abc import Sequence

from recallstore.errors import MemoryConflictError, MemoryValidationError
from recallstore.records import MemoryRecord, MemoryWriteInput

__all__ = ["IdempotencyKey", "idempotency_key_of", "idempotency_keys", "supersede_target"]


IdempotencyKey = tuple[tuple[tuple[str, str], ...], str]
"""``(scope pairs in key order, idempotency_key)``: what S16 makes unique among valid records."""


def idempotency_key_of(inp: MemoryWriteInput | MemoryRecord) -> IdempotencyKey:
    """The S16 key of an input or record (``""`` as the name when it has none)."""
    return tuple(inp.scope.items()), inp.idempotency_key or ""


def idempotency_keys(inputs: Sequence[MemoryWriteInput]) -> list[IdempotencyKey]:
    """The batch's keys; one key twice in a batch is refused before any I/O."""
    seen: dict[IdempotencyKey, int] = {}
    for index, inp in enumerate(inputs):
        if inp.idempotency_key is None:
            continue
        key = idempotency_key_of(inp)
        if key in seen:
            raise MemoryValidationError(
                f"inputs[{index}].idempotency_key",
                f"repeats the key of inputs[{seen[key]}] in the same scope",
                inp.idempotency_key,
            )
        seen[key] = index
    return list(seen)


def supersede_target(inp: MemoryWriteInput, holder: MemoryRecord | None) -> str | None:
    """What a write supersedes: its ``supersedes``, or the record holding its key (S16)."""
    if holder is None or inp.supersedes in (None, holder.id):
        return inp.supersedes if holder is None else holder.id
    raise MemoryConflictError(
        inp.supersedes or "",
        f"the idempotency key {inp.idempotency_key!r} is held by another record, {holder.id}",
    )
