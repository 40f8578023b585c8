"""The Python Porter stemmer agrees with SQLite FTS5's porter tokenizer, word for word."""

from __future__ import annotations

import sqlite3
import sysconfig
from pathlib import Path

import pytest

from recallstore._search.porter import porter_stem
from recallstore._search.text import fts5_words


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("cats", "cat"),
        ("agreed", "agre"),
        ("feed", "feed"),
        ("hopping", "hop"),
        ("filing", "file"),
        ("happy", "happi"),
        ("relational", "relat"),
        ("generalization", "gener"),
        ("hopefulness", "hope"),
        ("electrical", "electr"),
        ("adoption", "adopt"),
        ("controlling", "control"),
        ("archaeology", "archaeolog"),
        ("is", "is"),  # under 3 bytes: left alone
        ("was", "wa"),  # why stop words are dropped before stemming
        ("x" * 65 + "ing", "x" * 65 + "ing"),  # over 64 bytes: left alone
        ("2023s", "2023"),
    ],
)
def test_known_stems(word: str, stem: str) -> None:
    assert porter_stem(word) == stem


def _vocabulary() -> list[str]:
    """Every distinct word of the standard library's top-level modules (~20k words)."""
    text = " ".join(
        path.read_text(encoding="utf-8", errors="ignore")
        for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    )
    return sorted({word for word in fts5_words_all(text)})


def fts5_words_all(text: str) -> list[str]:
    # fts5_words stops at the query-term cap; fold the whole text the same way.
    return [word for chunk in text.split() for word in fts5_words(chunk)]


@pytest.mark.slow
def test_agrees_with_fts5_over_a_large_vocabulary() -> None:
    words = _vocabulary()
    assert len(words) > 5_000
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(w, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, instance)")
    conn.executemany("INSERT INTO f (rowid, w) VALUES (?, ?)", enumerate(words, start=1))
    indexed = {doc: term for term, doc in conn.execute("SELECT term, doc FROM v")}
    mismatches = [
        (word, indexed.get(n), porter_stem(word))
        for n, word in enumerate(words, start=1)
        if indexed.get(n) != porter_stem(word)
    ]
    assert mismatches == []
