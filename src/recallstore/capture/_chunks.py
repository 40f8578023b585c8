"""Splitting a long message at sentence boundaries into chunks of at most ``limit`` characters."""

from __future__ import annotations

import re
from typing import Final

_SENTENCE_END: Final = re.compile(r"(?<=[.!?…。！？])\s+|\n\s*\n")
"""Where a sentence (or a paragraph) ends: after . ! ? … 。！？ and whitespace, or a blank line."""
_SPACE: Final = re.compile(r"\s+")


def split_text(text: str, limit: int) -> list[str]:
    """``text`` as chunks of at most ``limit`` characters, cut between sentences.

    Sentences are packed greedily, in order; a sentence longer than ``limit`` is cut
    between words, and a word longer than ``limit`` is cut where the limit falls. Text
    within ``limit`` is one chunk, as it is. Joining the chunks with spaces gives the
    text back up to whitespace.
    """
    if len(text) <= limit:
        return [text]
    chunks: list[str] = []
    current = ""
    for sentence in _pieces(text, limit):
        if current and len(current) + 1 + len(sentence) <= limit:
            current = f"{current} {sentence}"
            continue
        if current:
            chunks.append(current)
        current = sentence
    if current:
        chunks.append(current)
    return chunks


def _pieces(text: str, limit: int) -> list[str]:
    """The sentences of ``text``, each cut further until it fits in ``limit``."""
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        if len(sentence) <= limit:
            pieces.append(sentence)
            continue
        for word in _SPACE.split(sentence):
            while len(word) > limit:
                pieces.append(word[:limit])
                word = word[limit:]
            if word:
                pieces.append(word)
    return pieces
