"""Proposers: what suggests operations. A protocol, and the deterministic defaults.

A proposer sees the valid records of one scope (oldest first) and returns operations;
nothing it returns is trusted: :mod:`recallstore.consolidation.validate` checks every
one before it can be in a plan. The defaults are deterministic and need no model:

* :class:`ExactDuplicates` — equal content (:mod:`recallstore.sameness`): every copy
  but one becomes a ``duplicate`` of the one kept (a profile record first, else the
  oldest: the first time it was said).
* :class:`NearDuplicates` — the same content words in another wording (the same set
  of word stems once filler words and punctuation are dropped): the older ones are
  superseded by the newest.
* :class:`SlotMatch` (optional, not a default) — one slot of a statement changed:
  records with the same ``target`` (section and key), or, with ``by_text``, the same
  words but for one span of at most three (``I love X`` → ``I hate X``, ``My name is
  Ana`` → ``My name is Bea``): the newest supersedes the others. Text slots are a
  heuristic (``Ana has a cat`` / ``Ana has a dog`` match too), hence opt-in.

Each works newest (or keeper) first and keeps one survivor per group, so a second
run over the result proposes nothing.

A proposer that gets a suggestion it cannot state as an operation (a model's answer
without the record its ``supersede`` needs) returns it as an :class:`UnusableProposal`:
validation then keeps it among the plan's rejections with its problem, and the rest of
the plan stands.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Final, Protocol, Self, runtime_checkable

from pydantic import Field

from recallstore._search.query import document_stems
from recallstore.consolidation.plan import Operation
from recallstore.records import MemoryRecord
from recallstore.sameness import normal_form
from recallstore.values import MAX_ID_CHARS, MAX_REASON_CHARS

__all__ = [
    "DEFAULT_PROPOSERS",
    "ExactDuplicates",
    "NearDuplicates",
    "Proposer",
    "SlotMatch",
    "UnusableProposal",
]

_FILLER: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "really",
        "very",
        "just",
        "also",
        "actually",
        "indeed",
        "quite",
        "so",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "she",
        "it",
        "they",
        "them",
        "his",
        "her",
        "its",
        "their",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "and",
        "or",
        "but",
    ]
)
"""Words whose presence does not change what a statement says, for NearDuplicates."""
_MAX_SLOT_WORDS: Final = 3
_MIN_SHARED_WORDS: Final = 2


@runtime_checkable
class Proposer(Protocol):
    """Suggests operations for one scope's valid records; a model may be behind it."""

    @property
    def name(self) -> str:
        """A short name shown in the plan and its rejections."""
        ...

    async def propose(self, records: Sequence[MemoryRecord]) -> Sequence[Operation]:
        """Operations on ``records`` (valid, one exact scope, oldest first)."""
        ...


class UnusableProposal(Operation):
    """A suggestion its proposer could not state as an operation, and why: never in a
    plan's operations, always among its rejections (with ``problem``).

    It is a ``noop`` of ``record_id`` (the record the suggestion named, or ``"?"``), so a
    plan keeps it as any rejection; the action the suggestion meant is in ``problem``.
    """

    problem: str = Field(min_length=1, max_length=MAX_REASON_CHARS)

    @classmethod
    def of(cls, record_id: object, reason: object, problem: str) -> Self:
        """The rejection-to-be of a suggestion naming ``record_id`` (any value: one that
        is not an id becomes ``"?"``) for ``reason`` (likewise ``"?"``)."""

        def text(value: object, limit: int) -> str:
            ok = isinstance(value, str) and value.strip() and len(value) <= limit
            return value if ok and isinstance(value, str) else "?"

        return cls(
            action="noop",
            record_id=text(record_id, MAX_ID_CHARS),
            reason=text(reason, MAX_REASON_CHARS // 2),
            problem=problem[:MAX_REASON_CHARS],
        )


def _newest_first(records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    return sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)


def _supersede_by_key(
    records: Sequence[MemoryRecord], keys_of: _KeysOf, reason: str
) -> list[Operation]:
    """Newest first: a record sharing a key with a newer survivor is superseded by it."""
    survivors: dict[Hashable, MemoryRecord] = {}
    operations: list[Operation] = []
    for record in _newest_first(records):
        keys = keys_of(record)
        newer = next((survivors[key] for key in keys if key in survivors), None)
        if newer is not None:
            operations.append(
                Operation(
                    action="supersede",
                    record_id=record.id,
                    superseded_by=newer.id,
                    reason=reason,
                )
            )
            continue
        for key in keys:
            survivors[key] = record
    return operations


class _KeysOf(Protocol):
    def __call__(self, record: MemoryRecord, /) -> list[Hashable]: ...


class ExactDuplicates:
    """Equal content after normalising (see the module): duplicates of the one kept."""

    name = "exact-duplicates"

    async def propose(self, records: Sequence[MemoryRecord]) -> Sequence[Operation]:
        """A ``duplicate`` for every copy but the kept one of each equal group."""
        kept: dict[str, MemoryRecord] = {}
        operations: list[Operation] = []
        order = sorted(records, key=lambda r: (r.kind != "profile", r.created_at, r.id))
        for record in order:
            text = normal_form(record.content)
            keeper = kept.setdefault(text, record)
            if keeper is not record:
                operations.append(
                    Operation(
                        action="duplicate",
                        record_id=record.id,
                        duplicate_of=keeper.id,
                        reason="the same text, saved again",
                    )
                )
        return operations


def _content_words(record: MemoryRecord) -> frozenset[str]:
    words = normal_form(record.content).split(" ")
    kept = " ".join(word for word in words if word.strip(".,;:!?'\"()") not in _FILLER)
    return frozenset(document_stems(kept))


class NearDuplicates:
    """The same content words in another wording: the newest supersedes the others."""

    name = "near-duplicates"

    async def propose(self, records: Sequence[MemoryRecord]) -> Sequence[Operation]:
        """A ``supersede`` of every older record with the same content words."""

        def keys(record: MemoryRecord) -> list[Hashable]:
            words = _content_words(record)
            return [words] if words else []

        return _supersede_by_key(records, keys, "the same statement in newer wording")


class SlotMatch:
    """One slot of a statement changed: the newest supersedes (see the module)."""

    def __init__(self, *, by_target: bool = True, by_text: bool = False) -> None:
        """``by_target``: same ``target`` section and key; ``by_text``: one changed span."""
        self._by_target = by_target
        self._by_text = by_text

    @property
    def name(self) -> str:
        """``slot-match`` with what it matches on."""
        parts = [p for p, on in (("target", self._by_target), ("text", self._by_text)) if on]
        return "slot-match(" + ",".join(parts) + ")"

    async def propose(self, records: Sequence[MemoryRecord]) -> Sequence[Operation]:
        """A ``supersede`` of every older record whose slot a newer one fills again."""

        def keys(record: MemoryRecord) -> list[Hashable]:
            found: list[Hashable] = []
            if self._by_target and record.target is not None and record.target.key:
                found.append(("target", record.target.section, record.target.key))
            if self._by_text:
                found.extend(_slot_keys(normal_form(record.content)))
            return found

        return _supersede_by_key(records, keys, "a newer statement fills the same slot")


def _slot_keys(text: str) -> list[Hashable]:
    """The statement with each span of 1–3 words cut out, keeping at least two words."""
    words = [word.strip(".,;:!?'\"()") for word in text.split(" ")]
    keys: list[Hashable] = []
    for width in range(1, _MAX_SLOT_WORDS + 1):
        for start in range(len(words) - width + 1):
            prefix, suffix = words[:start], words[start + width :]
            if len(prefix) + len(suffix) >= _MIN_SHARED_WORDS and len(prefix) >= 1:
                keys.append(("text", tuple(prefix), tuple(suffix)))
    return keys


DEFAULT_PROPOSERS: Final[tuple[Proposer, ...]] = (ExactDuplicates(), NearDuplicates())
"""What :func:`~recallstore.consolidation.consolidate` runs without ``proposers=``."""
