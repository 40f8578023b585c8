"""The model's tokenizer in plain Python: BERT's uncased WordPiece, read from its file.

all-MiniLM-L6-v2 tokenizes with ``BertNormalizer`` (clean the text, space out CJK
characters, lower-case, strip accents), ``BertPreTokenizer`` (split on whitespace and
punctuation) and greedy longest-match-first WordPiece over the vocabulary in
``tokenizer.json``, framed by ``[CLS]`` … ``[SEP]``. This module does the same steps
(the tests check it token for token against the ``tokenizers`` library on real
text), so the ``semantic`` extra needs neither that library nor its hub client.
"""

from __future__ import annotations

import json
import unicodedata
from functools import lru_cache
from pathlib import Path

__all__ = ["WordPiece"]

_MAX_WORD_CHARS = 100
_CONTINUATION = "##"


class WordPiece:
    """Token ids of texts, as the model's ``tokenizer.json`` defines them."""

    def __init__(self, path: Path, *, max_tokens: int) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        self._vocab: dict[str, int] = data["model"]["vocab"]
        self._unknown = self._vocab[data["model"]["unk_token"]]
        self._first = self._vocab["[CLS]"]
        self._last = self._vocab["[SEP]"]
        self._max_tokens = max_tokens
        self._word_ids = lru_cache(maxsize=65_536)(self._uncached_word_ids)

    def ids(self, text: str) -> list[int]:
        """``[CLS]``, the text's word pieces (cut to fit), ``[SEP]``."""
        pieces: list[int] = []
        room = self._max_tokens - 2
        for word in _words(_normalised(text)):
            pieces.extend(self._word_ids(word))
            if len(pieces) >= room:
                del pieces[room:]
                break
        return [self._first, *pieces, self._last]

    def _uncached_word_ids(self, word: str) -> tuple[int, ...]:
        if len(word) > _MAX_WORD_CHARS:
            return (self._unknown,)
        found: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else _CONTINUATION + word[start:end]
                if piece in self._vocab:
                    found.append(self._vocab[piece])
                    break
                end -= 1
            else:
                return (self._unknown,)  # no piece fits: the whole word is unknown
            start = end
        return tuple(found)


def _normalised(text: str) -> str:
    """BertNormalizer: controls dropped, whitespace as spaces, CJK spaced out, then
    lower case without accents."""
    out: list[str] = []
    for char in text:
        code = ord(char)
        if code == 0 or code == 0xFFFD or _is_control(char):
            continue
        if _is_whitespace(char):
            out.append(" ")
        elif _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    lowered = "".join(out).lower()
    return "".join(
        char for char in unicodedata.normalize("NFD", lowered) if unicodedata.category(char) != "Mn"
    )


def _words(text: str) -> list[str]:
    """BertPreTokenizer: whitespace-separated, every punctuation character alone."""
    words: list[str] = []
    for chunk in text.split():
        current: list[str] = []
        for char in chunk:
            if _is_punctuation(char):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(char)
            else:
                current.append(char)
        if current:
            words.append("".join(current))
    return words


def _is_whitespace(char: str) -> bool:
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in {"Cc", "Cf", "Cn", "Co"}


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )
