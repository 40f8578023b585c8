"""Pure render functions for the prompt text memory produces.

Nothing here performs I/O beyond reading the package's own templates, and the same
input always renders the same text. Memory content is untrusted: it is escaped in
Python before the template sees it, so the template only ever handles safe strings,
and content is passed to jinja2 as data — it is never compiled as a template.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import jinja2

from recallstore._recalled import entry_handle
from recallstore._unicode import DROPPED_CATEGORIES, JOINERS, escape_table
from recallstore.prompt._excerpt import excerpt
from recallstore.sameness import statement_key
from recallstore.values import model_date

if TYPE_CHECKING:  # the render layer imports nothing from the machinery at run time
    from recallstore._recalled import Recall
    from recallstore.records import MemoryRecord
    from recallstore.tools import ToolSpec

__all__ = [
    "RECALL_CLOSE",
    "RECALL_OPEN",
    "Awareness",
    "Manual",
    "RenderContext",
    "entry_handle",
    "escape_memory_text",
    "recall_entry_size",
    "recall_frame_size",
    "render_recall",
]

RECALL_OPEN = "<recalled_memories>"
"""The line that opens the recall block."""
RECALL_CLOSE = "</recalled_memories>"
"""The line that closes the recall block; memory content can never produce it."""

_WHITESPACE = re.compile(r"\s+")
# Zero-width joiners stay where emoji and several scripts need them: one, between two
# visible characters. A run of them, or one at a word's edge, could only carry a hidden
# (binary) message, so it is dropped.
_STRAY_JOINERS = re.compile(
    rf"[{JOINERS}]{{2,}}|(?<![^\s{JOINERS}])[{JOINERS}]|[{JOINERS}](?![^\s{JOINERS}])"
)


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("recallstore.prompt", "templates"),
        # Escaping is done in Python for plain text, not HTML; see escape_memory_text.
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def escape_memory_text(text: str) -> str:
    """Make untrusted text safe to place on one line inside the recall block.

    ``&``, ``<`` and ``>`` become ``&amp;``, ``&lt;``, ``&gt;``, and every other character
    a model could read as an angle bracket (``〈 ‹ « ˂ ＜ ≪`` …) a character reference, so
    no tag, and no delimiter or look-alike of it, can be spelled; every run of
    whitespace, line breaks included, becomes one space (so an entry is exactly one
    line and cannot start a forged one); invisible characters (controls, format
    characters, variation selectors, tag letters, private-use and unassigned code
    points) are dropped. Both sets come from Unicode data: see
    ``recallstore._unicode``.
    """
    if text.isascii():  # most text: the same rules, on ASCII's few cases
        if _ASCII_UNCHANGED.fullmatch(text):  # the rules below would return it as it is
            return text
        escaped = _ASCII_DROPPED.sub("", text).replace("&", "&amp;")
        escaped = escaped.replace("<", "&lt;").replace(">", "&gt;")
        return _WHITESPACE.sub(" ", escaped).strip()
    visible = "".join(ch for ch in text.translate(escape_table()) if _kept(ch))
    return _WHITESPACE.sub(" ", _STRAY_JOINERS.sub("", visible)).strip()


def _kept(ch: str) -> bool:
    """Whether ``escape_memory_text`` keeps the character ``ch``."""
    return ch.isspace() or ch in JOINERS or unicodedata.category(ch) not in DROPPED_CATEGORIES


# The ASCII characters _kept drops (the controls that are not whitespace), as one class;
# the only ASCII characters escape_table() escapes are "&", "<" and ">"
# (tests/agent/test_recall_escapes.py checks each ASCII character both ways).
_ASCII_DROPPED = re.compile(
    "[" + re.escape("".join(ch for ch in map(chr, range(128)) if not _kept(ch))) + "]"
)

# ASCII text the rules leave as it is: printable, without "&", "<" or ">", its words
# one space apart, none before the first or after the last. Found in one pass instead
# of the rules' four: every entry of a recall block is escaped as it is sized and again
# as it is rendered.
_ASCII_UNCHANGED = re.compile(r"(?:[!-%'-;=?-~]+(?: [!-%'-;=?-~]+)*)?")


@dataclass(frozen=True, slots=True)
class _EntryLine:
    handle: str
    """The entry's short name in this conversation (``m1``), which its tools accept as
    the memory's id."""
    day: str
    """The day the thing was said (``observed_at``), else the day it was saved."""
    text: str


def _entry_line(record: MemoryRecord, position: int, query: str) -> _EntryLine:
    return _EntryLine(
        handle=entry_handle(position),
        day=model_date(record.observed_at or record.created_at),
        text=escape_memory_text(excerpt(record.content, query)),
    )


def _entry_lines(
    records: Iterable[MemoryRecord], said: set[str], query: str, start: int
) -> list[_EntryLine]:
    # ``said`` is shared by the block's sections: a statement is shown once, where first.
    lines = []
    for position, record in enumerate(records, start=start):
        text = statement_key(record.content)
        if text in said:
            continue
        said.add(text)
        lines.append(_entry_line(record, position, query))
    return lines


@dataclass(frozen=True, slots=True)
class RenderContext:
    """The design seed's argument to :meth:`Awareness.from_recall`: the recall, resolved
    upstream. Kept as an alias; :func:`render_recall` takes the recall itself."""

    recall: Recall | None = None


@cache
def _recall_template() -> jinja2.Template:
    return _environment().get_template("recall.md.j2")


@cache
def _recall_macros() -> Any:
    # The template's top level reads these names; its macros are what is wanted here.
    return _recall_template().make_module(vars={"profile": [], "hits": [], "omitted": 0})


def _line_text(line: _EntryLine) -> str:
    return str(_recall_macros().entry_line(line)) + "\n"


def recall_entry_size(
    record: MemoryRecord, *, position: int = 0, user_text: str = ""
) -> tuple[int, int]:
    """Characters and UTF-8 bytes ``record`` adds to a recall block as its entry at
    ``position`` (which names its handle) for the first message ``user_text`` (which
    chooses a long memory's excerpt): its line and the line break after it
    (``assemble_recall`` counts these against the budget)."""
    text = _line_text(_entry_line(record, position, user_text))
    return len(text), len(text.encode())


@cache
def recall_frame_size(has_profile: bool, has_hits: bool, omitted: int) -> tuple[int, int]:
    """Characters and UTF-8 bytes of a recall block around its entries: the delimiters,
    the introduction, the section headings present and the truncation note.

    A block is exactly this plus :func:`recall_entry_size` of each entry.
    """
    stub = _EntryLine(handle="", day="", text="")
    text = (
        _recall_template()
        .render(profile=[stub] * has_profile, hits=[stub] * has_hits, omitted=omitted)
        .replace(_line_text(stub), "")
    )
    return len(text), len(text.encode())


def render_recall(recall: Recall | None) -> str | None:
    """The ``<recalled_memories>`` block for ``recall``, or None when nothing was recalled.

    Pure: the same recall renders the same text, byte for byte. The one rendering
    path: ``Awareness.from_recall(RenderContext(recall=recall))``, the design seed's
    spelling, calls it.
    """
    if recall is None or (not recall.entries and not recall.omitted):
        return None
    said: set[str] = set()
    count, query = recall.profile_count, recall.user_text
    return _recall_template().render(
        profile=_entry_lines(recall.entries[:count], said, query, 0),
        hits=_entry_lines(recall.entries[count:], said, query, count),
        omitted=recall.omitted,
    )


class Awareness:
    """The design seed's name for the recall renderer, kept as an alias of
    :func:`render_recall` (the one rendering path)."""

    @staticmethod
    def from_recall(ctx: RenderContext) -> str | None:
        """:func:`render_recall` of ``ctx.recall``."""
        return render_recall(ctx.recall)


class Manual:
    """The standing instruction: the model has memory, when to use it, how to curate it."""

    @staticmethod
    def render(tools: Iterable[ToolSpec[Any, Any, Any]] | None = None) -> str:
        """The manual's text for ``tools`` (default: the memory tools, ``MEMORY_TOOLS``).

        It names the tools in order and adds each tool's ``manual_use`` and
        ``manual_rules`` lines to the guidance every manual carries.
        """
        if tools is None:
            # Deferred: the default toolset is the only machinery the Manual ever needs.
            from recallstore.toolset import MEMORY_TOOLS

            tools = MEMORY_TOOLS
        specs = list(tools)
        for spec in specs:
            if isinstance(spec, str):
                raise TypeError(
                    "Manual.render takes tool specs (e.g. recallstore.MEMORY_TOOLS or "
                    f"toolbox.specs), not tool names: got {spec!r}"
                )
        if not specs:
            raise ValueError("the Manual needs at least one tool to describe")
        return (
            _environment()
            .get_template("manual.md.j2")
            .render(
                tool_names=[spec.name for spec in specs],
                use_lines=[line for spec in specs for line in spec.manual_use],
                tool_rules=[rule for spec in specs for rule in spec.manual_rules],
            )
        )
