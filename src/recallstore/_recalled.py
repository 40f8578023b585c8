"""``Recall``: what one conversation recalled, and how the budget treated it.

The result of ``recallstore.recall.assemble_recall`` and the input of
``recallstore.prompt.render_recall``. It lives below both (public as
``recallstore.recall.Recall``), so the render code can name it and the recall
machinery can use the render code's sizes without either importing the other.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from recallstore.records import MemoryRecord

__all__ = ["Recall", "entry_handle"]


def entry_handle(position: int) -> str:
    """The handle of a recall's entry at ``position`` (0-based): ``m1``, ``m2``, …"""
    return f"m{position + 1}"


class Recall(BaseModel):
    """The memories recalled for one conversation, and how the budget treated them."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    scope: dict[str, str]
    user_text: str
    entries: tuple[MemoryRecord, ...]
    """Profile records first, then search hits, each at most once."""
    profile_count: int
    hit_count: int
    omitted: int
    """Entries fetched but left out because they did not fit the budget."""
    truncated: bool
    budget_chars: int
    used_chars: int
    """Characters of the rendered recall block (``render_recall``), the size the budget
    bounds; 0 when there is no block."""
    used_bytes: int = 0
    """UTF-8 size of the rendered recall block."""

    @property
    def profile(self) -> tuple[MemoryRecord, ...]:
        """The profile entries (always first)."""
        return self.entries[: self.profile_count]

    @property
    def hits(self) -> tuple[MemoryRecord, ...]:
        """The search-hit entries, after the profile."""
        return self.entries[self.profile_count :]

    @property
    def handles(self) -> dict[str, str]:
        """Each entry's handle in the rendered block (``m1``, ``m2``, … in order) mapped to
        its record id: what the conversation's toolbox accepts in place of the id."""
        return {entry_handle(position): record.id for position, record in enumerate(self.entries)}

    @property
    def is_empty(self) -> bool:
        """True when nothing was recalled and nothing was omitted."""
        return not self.entries and not self.omitted
