"""The characters untrusted text must not show as they are, derived from Unicode data.

Two sets, both computed from the running Python's ``unicodedata`` (categories, names,
compatibility forms) rather than listed by hand, so a look-alike or an invisible
character in a newer Unicode version is covered by the rule that covers its siblings:

* **angle-bracket look-alikes** — every character a model could read as ``<`` or
  ``>``: names with ANGLE BRACKET, ANGLE QUOTATION MARK, LESS-THAN, GREATER-THAN,
  LEFT/RIGHT ARROWHEAD or LEFT/RIGHT-POINTING ANGLE (``〈 ‹ « ˂ ⟨ ❮ ≤ ≪``), the
  characters whose compatibility forms (NFKC, NFKD) contain ``<``, ``>`` or one of
  those (``＜ ﹤ ≮``, the vertical presentation form ``︿``), and ``<``/``>``
  themselves. They become
  character references: ``&lt;``/``&gt;`` for those whose compatibility form is
  ``<``/``>``, ``&#xHEX;`` for the rest, so the text keeps its meaning but no glyph of
  it can spell the block's delimiter.
* **invisible characters** — controls (Cc), format characters (Cf: bidi overrides,
  zero-width spaces, the "tag" letters), surrogates (Cs), private-use (Co) and
  unassigned (Cn) code points, variation selectors (``U+FE00–FE0F``,
  ``U+E0100–E01EF``, the Mongolian ones), the combining grapheme joiner, the Khmer
  inherent vowels and the Hangul and Khitan fillers — the default-ignorable
  characters that render as nothing and can carry a hidden message to a model. They
  are dropped. Whitespace is not among them (it is folded to one space elsewhere).

The recall block escapes and drops them (``recallstore.prompt``); the dashboard and
the command line reveal the invisible ones (:func:`hidden_characters`). The name scan
behind :func:`escape_table` runs once per process, on first use (a few tenths of a
second).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache
from typing import Final

__all__ = ["DROPPED_CATEGORIES", "JOINERS", "escape_table", "hidden_characters", "is_hidden"]

DROPPED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
"""General categories whose characters are invisible (or have no agreed glyph)."""

_BRACKET_NAME: Final = re.compile(
    r"ANGLE BRACKET|ANGLE QUOTATION MARK|LESS-THAN|GREATER-THAN"
    r"|\b(?:LEFT|RIGHT) ARROWHEAD|\b(?:LEFT|RIGHT)-POINTING ANGLE\b"
)
# Default-ignorable characters outside the dropped categories (Unicode's
# Other_Default_Ignorable_Code_Point and Variation_Selector, by name).
_INVISIBLE_NAME: Final = re.compile(
    r"VARIATION SELECTOR|^COMBINING GRAPHEME JOINER$|^KHMER VOWEL INHERENT"
    r"|^(?:HALFWIDTH )?HANGUL (?:CHOSEONG |JUNGSEONG )?FILLER$|^KHITAN SMALL SCRIPT FILLER$"
)
_ENTITIES: Final = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
JOINERS: Final = "\u200c\u200d"
"""Zero-width non-joiner and joiner: format characters emoji and several scripts need."""


def is_hidden(ch: str) -> bool:
    """True for an invisible character (see the module docstring); whitespace and the
    zero-width joiners are not counted."""
    if ch.isspace() or ch in JOINERS:
        return False
    if unicodedata.category(ch) in DROPPED_CATEGORIES:
        return True
    return _INVISIBLE_NAME.search(unicodedata.name(ch, "")) is not None


def hidden_characters(text: str) -> list[str]:
    """The invisible characters of ``text`` in order, as ``U+FE0F``-style labels."""
    return [f"U+{ord(ch):04X}" for ch in text if is_hidden(ch)]


def _is_standalone(ch: str) -> bool:
    # Combining marks draw on the previous character and format characters are dropped.
    return unicodedata.category(ch)[0] != "M" and unicodedata.category(ch) not in DROPPED_CATEGORIES


@cache
def escape_table() -> dict[int, str | None]:
    """The ``str.translate`` table: ``&``, every bracket look-alike and every invisible
    character outside :data:`DROPPED_CATEGORIES` (those are too many for a table and are
    filtered by category)."""
    named: set[str] = {"<", ">"}
    invisible: set[str] = set()
    decomposable: list[str] = []
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        name = unicodedata.name(ch, "")
        # The substring tests only skip the regular expressions for most names (speed).
        if ("ANGLE" in name or "THAN" in name or "ARROWHEAD" in name) and _BRACKET_NAME.search(
            name
        ):
            if _is_standalone(ch):
                named.add(ch)
        elif (
            "SELECTOR" in name or "JOINER" in name or "INHERENT" in name or "FILLER" in name
        ) and _INVISIBLE_NAME.search(name):
            invisible.add(ch)
        if unicodedata.decomposition(ch):
            decomposable.append(ch)
    table: dict[int, str | None] = {ord("&"): _ENTITIES["&"]}
    table.update({ord(ch): _reference(ch) for ch in named})
    for ch in decomposable:
        forms = unicodedata.normalize("NFKC", ch) + unicodedata.normalize("NFKD", ch)
        if _is_standalone(ch) and any(part in named for part in forms):
            table[ord(ch)] = _reference(ch)
    table.update(dict.fromkeys(map(ord, invisible)))
    return table


def _reference(ch: str) -> str:
    folded = unicodedata.normalize("NFKC", ch)
    return _ENTITIES.get(folded, f"&#x{ord(ch):X};")
