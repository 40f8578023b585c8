"""Excerpting a long memory for the recall block: its sentences that match the query.

A capture chunk or a long note would fill the block on its own (or never fit). The
block shows at most :data:`EXCERPT_CHARS` characters of one memory: its sentences that
share the most words (stems) with the conversation's first message, in their own
order, each cut marked with ``…``; when none matches, its opening. The whole memory
stays one ``memory_search`` away. Pure and deterministic: the same text and query
give the same excerpt.
"""

from __future__ import annotations

import re
from typing import Final

from recallstore._search.porter import porter_stem
from recallstore._search.query import STOP_WORDS
from recallstore._search.text import tokenize

__all__ = ["ELLIPSIS", "EXCERPT_CHARS", "excerpt"]

EXCERPT_CHARS: Final = 300
"""The longest a memory's text is in the recall block, in characters, before escaping
(chosen by measurement: docs/benchmarks.md, "The recall block")."""
ELLIPSIS: Final = "…"
"""Marks where an excerpt leaves text out."""

# A sentence ends at . ! ? … (and their full-width forms) followed by a space, or at
# a line break; chat messages often use line breaks where prose uses full stops.
_SENTENCE_END: Final = re.compile(r"(?<=[.!?…。！？])\s+|\s*\n\s*")


def _stems(text: str) -> set[str]:
    return {porter_stem(word) for word in tokenize(text) if word not in STOP_WORDS}


def _cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, marked."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip() + ELLIPSIS


def _around(sentence: str, wanted: set[str], limit: int) -> str:
    """A ``limit``-character window of a long ``sentence``, from its first matching
    word when that lies beyond the window's first third."""
    words = list(re.finditer(r"\S+", sentence))
    start = 0
    for match in words:
        if _stems(match.group()) & wanted:
            start = match.start()
            break
    if start <= limit // 3:
        return _cut(sentence, limit)
    rest = sentence[start - limit // 4 :]
    rest = rest[rest.find(" ") + 1 :] if " " in rest else rest
    return ELLIPSIS + _cut(rest, limit - 1)


def excerpt(text: str, query: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` when it fits ``limit``; otherwise its sentences that best match
    ``query`` (most shared stems first, earlier first on ties) that fit, in order,
    with ``…`` where text was left out."""
    text = text.strip()
    if len(text) <= limit:
        return text
    sentences = [part for part in _SENTENCE_END.split(text) if part.strip()]
    wanted = _stems(query)
    scored = sorted(
        range(len(sentences)),
        key=lambda index: (-len(_stems(sentences[index]) & wanted), index),
    )
    opening = not wanted or not _stems(sentences[scored[0]]) & wanted
    if opening:  # nothing matches: the opening
        scored = list(range(len(sentences)))
    else:  # only the sentences that match
        scored = [index for index in scored if _stems(sentences[index]) & wanted]
    chosen: list[int] = []
    used = 0
    for index in scored:
        cost = len(sentences[index]) + 2  # a joining space and a possible mark
        if used + cost > limit:
            if not chosen:
                window = _around(sentences[index], wanted, limit - 2)
                return window if window.startswith(ELLIPSIS) or not index else ELLIPSIS + window
            if opening:
                break
            continue
        chosen.append(index)
        used += cost
    chosen.sort()
    parts = [ELLIPSIS] if chosen[0] > 0 else []
    for position, index in enumerate(chosen):
        if position and index != chosen[position - 1] + 1:
            parts.append(ELLIPSIS)
        parts.append(sentences[index].strip())
    if chosen[-1] < len(sentences) - 1:
        parts.append(ELLIPSIS)
    return " ".join(parts)
