"""The overlay: the promoted records of a scope as the learned sections of a prompt.

:func:`assemble_learned` reads what the host promoted (the ``"promote"`` extension,
:mod:`recallstore.store.learning`) for exactly one scope, keeps the records that are
still valid (a record superseded, invalidated or expired since it was promoted is
left out: it was contradicted), and renders them with
:func:`~recallstore.prompt.render_learned` within their own budget, apart from the
recall block, which stays notes. Each line keeps its source: the record id and the
conversations behind it (provenance and supports). A store without the extension
learns nothing: the prompt is what it always was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol, runtime_checkable

from recallstore.errors import ConfigurationError
from recallstore.prompt import LEARNED_HEADINGS, LearnedLine, render_learned
from recallstore.store import (
    PROMOTE_EXTENSION,
    MemoryStore,
    SupportsPromotion,
    conversations_of,
    store_clock,
)
from recallstore.values import canonical_scope

__all__ = [
    "DEFAULT_LEARNED_BUDGET_CHARS",
    "Learned",
    "LearnedObserver",
    "assemble_learned",
]

DEFAULT_LEARNED_BUDGET_CHARS: Final = 2_000
"""Default budget of the learned block, in characters, apart from the recall budget."""


@dataclass(frozen=True, slots=True)
class Learned:
    """The learned sections of one conversation's prompt, and where each line came from."""

    scope: dict[str, str]
    lines: tuple[LearnedLine, ...]
    """Every promoted record of the scope that is still valid, in section order."""
    shown: tuple[LearnedLine, ...]
    """The lines the block shows (the budget may leave some out)."""
    omitted: int
    block: str | None
    """The ``<learned_instructions>`` block; None when nothing is learned."""
    budget_chars: int

    def source_of(self, record_id: str) -> tuple[str, ...]:
        """The conversations the shown line of ``record_id`` was learned from; () when
        no shown line is that record's."""
        for line in self.shown:
            if line.record_id == record_id:
                return line.conversations
        return ()


@runtime_checkable
class LearnedObserver(Protocol):
    """A store that wants to hear about each assembled overlay (to emit an event)."""

    def observe_learned(self, learned: Learned) -> None:
        """Called once per :func:`assemble_learned` that found anything to render."""
        ...


async def assemble_learned(
    store: MemoryStore,
    scope: Mapping[str, str],
    *,
    budget_chars: int = DEFAULT_LEARNED_BUDGET_CHARS,
    now: datetime | None = None,
) -> Learned:
    """The learned sections for exactly ``scope`` (non-empty), judged at ``now``
    (default: the store's clock). Reads only; the render is pure."""
    pairs = canonical_scope(scope)
    if not pairs:
        raise ConfigurationError("assemble_learned needs a non-empty scope")
    if budget_chars < 0:
        raise ConfigurationError(f"budget_chars must be >= 0, got {budget_chars}")
    empty = Learned(pairs, (), (), 0, None, budget_chars)
    if PROMOTE_EXTENSION not in store.capabilities().extensions or not isinstance(
        store, SupportsPromotion
    ):
        return empty
    promotions = await store.promotions(pairs)
    if not promotions:
        return empty
    moment = now if now is not None else store_clock(store)()
    lines: list[LearnedLine] = []
    for promotion in promotions:
        record = await store.get(promotion.record_id)
        if record is None or record.scope != pairs or record.status(moment) != "valid":
            continue
        lines.append(
            LearnedLine(
                record_id=record.id,
                kind=promotion.target.section,
                text=record.content,
                conversations=conversations_of(record),
            )
        )
    rendered = render_learned(lines, budget_chars=budget_chars)
    ordered = tuple(line for kind in LEARNED_HEADINGS for line in lines if line.kind == kind)
    learned = Learned(pairs, ordered, rendered.shown, rendered.omitted, rendered.text, budget_chars)
    if lines and isinstance(store, LearnedObserver):
        store.observe_learned(learned)
    return learned
