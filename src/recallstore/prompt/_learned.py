"""The learned sections of a system prompt: promoted records as standing instructions.

Pure, like the recall block: the same lines render the same text, byte for byte. Each
promoted record is one line under the heading of its target kind, its text escaped as
memory text (:func:`~recallstore.prompt.escape_memory_text`: it came from what users
said), followed by its source — the conversations that taught it and its record id —
so no line reaches the prompt without saying where it came from. The block has a
budget of its own, apart from the recall block's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Final

import jinja2

from recallstore.prompt._render import _environment, escape_memory_text

__all__ = [
    "LEARNED_CLOSE",
    "LEARNED_HEADINGS",
    "LEARNED_OPEN",
    "LearnedLine",
    "RenderedLearned",
    "render_learned",
]

LEARNED_OPEN: Final = "<learned_instructions>"
"""The line that opens the learned block."""
LEARNED_CLOSE: Final = "</learned_instructions>"
"""The line that closes it; memory content can never produce it."""

LEARNED_HEADINGS: Final[dict[str, str]] = {
    "background": "Background",
    "heuristic": "Judgment heuristics",
    "example": "Examples",
    "awareness": "Awareness",
}
"""Each promotion target kind's section heading, in the order sections are rendered."""


@dataclass(frozen=True, slots=True)
class LearnedLine:
    """One promoted record as the prompt shows it, with its source."""

    record_id: str
    kind: str
    """The target kind (``MemoryTarget.section``): one of :data:`LEARNED_HEADINGS`."""
    text: str
    """The record's content, unescaped (the render escapes it)."""
    conversations: tuple[str, ...]
    """The distinct conversations behind the record (provenance and supports)."""


@dataclass(frozen=True, slots=True)
class RenderedLearned:
    """What :func:`render_learned` made: the block (None when empty), the lines it
    shows and how many were left out for the budget."""

    text: str | None
    shown: tuple[LearnedLine, ...]
    omitted: int


@dataclass(frozen=True, slots=True)
class _Entry:
    text: str
    conversations: str
    record_id: str


@dataclass(frozen=True, slots=True)
class _Section:
    heading: str
    lines: tuple[_Entry, ...]


@cache
def _template() -> jinja2.Template:
    return _environment().get_template("learned.md.j2")


def _entry(line: LearnedLine) -> _Entry:
    conversations = ", ".join(escape_memory_text(c) for c in line.conversations) or "none named"
    return _Entry(escape_memory_text(line.text), conversations, escape_memory_text(line.record_id))


def _render(lines: Sequence[LearnedLine], omitted: int) -> str:
    sections = [
        _Section(heading, tuple(_entry(line) for line in lines if line.kind == kind))
        for kind, heading in LEARNED_HEADINGS.items()
    ]
    return _template().render(sections=[s for s in sections if s.lines], omitted=omitted)


def render_learned(lines: Sequence[LearnedLine], *, budget_chars: int) -> RenderedLearned:
    """The ``<learned_instructions>`` block of ``lines`` within ``budget_chars``.

    Lines are taken in their section order (:data:`LEARNED_HEADINGS`), then as given,
    while the whole block fits; the rest are counted as omitted and the block says so.
    A line of an unknown kind raises ``ValueError``. No line, or none that fits and
    nothing omitted: ``text`` is None, and the prompt is as it would be without
    learning.
    """
    unknown = sorted({line.kind for line in lines} - set(LEARNED_HEADINGS))
    if unknown:
        raise ValueError(f"unknown learned line kinds {unknown}; known: {list(LEARNED_HEADINGS)}")
    ordered = [line for kind in LEARNED_HEADINGS for line in lines if line.kind == kind]
    if not ordered:
        return RenderedLearned(None, (), 0)
    shown: list[LearnedLine] = []
    for line in ordered:
        candidate = [*shown, line]
        if len(_render(candidate, len(ordered) - len(candidate))) <= budget_chars:
            shown = candidate
    omitted = len(ordered) - len(shown)
    text = _render(shown, omitted)
    if len(text) > budget_chars:
        return RenderedLearned(None, (), omitted)
    return RenderedLearned(text, tuple(shown), omitted)
