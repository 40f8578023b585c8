"""The Porter stemmer exactly as SQLite FTS5's ``porter`` tokenizer applies it.

The SQLite backend stems inside FTS5; the in-memory and Postgres backends stem in
Python with :func:`porter_stem`, so all three index and query the same words. FTS5's
variant of the algorithm (M. F. Porter, 1980) has a few details of its own, kept here
because agreement with it matters more than agreement with the paper:

* words shorter than 3 or longer than 64 UTF-8 bytes are left alone;
* ``y`` counts as a vowel in the "stem contains a vowel" test wherever it is not the
  first letter; elsewhere it is a vowel only after a consonant;
* step 2 maps ``logi`` to ``log`` (Porter's later revision);
* any character other than ``a``–``z`` is a consonant.

A test compares this function with FTS5 itself over a large vocabulary.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import pairwise

_MAX_BYTES = 64
_MIN_BYTES = 3

# (suffix, replacement) tried in order; the first suffix that ends the word decides,
# and the rule applies only when the rest of the word meets the step's condition.
_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("logi", "log"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
)
_STEP3 = (
    ("ical", "ic"),
    ("ness", ""),
    ("icate", "ic"),
    ("iciti", "ic"),
    ("ful", ""),
    ("ative", ""),
    ("alize", "al"),
)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _is_vowel(char: str, y_is_vowel: bool) -> bool:
    return char in "aeiou" or (y_is_vowel and char == "y")


def _consonant_flags(stem: str) -> list[bool]:
    """Per letter: is it a consonant? (``y`` is a vowel after a consonant.)"""
    flags: list[bool] = []
    previous_consonant = False
    for char in stem:
        previous_consonant = not _is_vowel(char, previous_consonant)
        flags.append(previous_consonant)
    return flags


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem``."""
    flags = _consonant_flags(stem)
    return sum(1 for a, b in pairwise(flags) if not a and b)


def _has_vowel(stem: str) -> bool:
    return any(_is_vowel(char, index > 0) for index, char in enumerate(stem))


def _ends_cvc(stem: str) -> bool:
    """Porter's *o: consonant-vowel-consonant at the end, the last not w, x or y."""
    if not stem or stem[-1] in "wxy":
        return False
    return _consonant_flags(stem)[-3:] == [True, False, True]


def _replace(word: str, rules: tuple[tuple[str, str], ...], minimum_measure: int) -> str:
    for suffix, replacement in rules:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > minimum_measure else word
    return word


def _step1(word: str) -> str:
    if word.endswith("s"):
        if word.endswith("es") and (
            (len(word) > 4 and word.endswith("sses")) or (len(word) > 3 and word[-3] == "i")
        ):
            word = word[:-2]
        elif not word.endswith("ss"):
            word = word[:-1]
    removed = False
    if len(word) > 3 and word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    elif len(word) > 2 and word.endswith("ed") and _has_vowel(word[:-2]):
        word, removed = word[:-2], True
    elif len(word) > 3 and word.endswith("ing") and _has_vowel(word[:-3]):
        word, removed = word[:-3], True
    if removed:
        if len(word) > 2 and word[-2:] in ("at", "bl", "iz"):
            word += "e"
        elif (
            len(word) > 1
            and word[-1] == word[-2]
            and not _is_vowel(word[-1], False)
            and word[-1] not in "lsz"
        ):
            word = word[:-1]
        elif _measure(word) == 1 and _ends_cvc(word):
            word += "e"
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


def _step4(word: str) -> str:
    for suffix in _STEP4:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            if suffix == "ion" and not stem.endswith(("s", "t")):
                return word
            return stem if _measure(stem) > 1 else word
    return word


@lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    """The stem FTS5's ``porter`` tokenizer indexes for ``word`` (an already folded token)."""
    if not _MIN_BYTES <= len(word.encode()) <= _MAX_BYTES:
        return word
    word = _step1(word)
    word = _replace(word, _STEP2, 0)
    word = _replace(word, _STEP3, 0)
    word = _step4(word)
    if word.endswith("e"):
        stem = word[:-1]
        measure = _measure(stem)
        if measure > 1 or (measure == 1 and not _ends_cvc(stem)):
            word = stem
    if len(word) > 1 and word.endswith("ll") and _measure(word[:-1]) > 1:
        word = word[:-1]
    return word
