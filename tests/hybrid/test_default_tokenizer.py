"""The default embedder's WordPiece gives the ids the ``tokenizers`` library gives for
the model's own tokenizer.json, token for token (what the model was trained on)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.hybrid._paraphrases import PARAPHRASES

from recallstore._default_embedder import MAX_TOKENS, TOKENIZER_FILE
from recallstore._default_embedder._wordpiece import WordPiece

tokenizers = pytest.importorskip("tokenizers")

TRICKY = [
    "",
    "   ",
    "Café naïve résumé — “quoted” and 'single' quotes…",
    "東京タワー and 中文字符 beside ＦＵＬＬＷＩＤＴＨ letters",
    "emoji 😀🎉 and symbols © ® ™ ½ ² Ⅻ ǅ ﬁ",
    "controls a\u0000b\u200bc\u00a0d\te\nf\r\ng\u2028h",
    "İstanbul, ÅNGSTRÖM, straße, Ünïcödé",
    "$5.00 @home #tag 10:30 e-mail a/b c\\d [x] {y} <z> ~w^ `q` |p|",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "x" * 101,
    "word " * 400,
    "Caroline: Hey Mel! I went to the LGBTQ support group yesterday and it was so powerful.",
]


@pytest.mark.parametrize(
    "text",
    TRICKY + [text for pair in PARAPHRASES for text in (pair.memory, pair.first_message)],
)
def test_ids_match_the_tokenizers_library(text: str, reference: Any, wordpiece: WordPiece) -> None:
    assert wordpiece.ids(text) == reference.encode(text).ids


@pytest.fixture(scope="module")
def reference() -> Any:
    loaded = tokenizers.Tokenizer.from_file(str(TOKENIZER_FILE))
    loaded.enable_truncation(MAX_TOKENS)
    loaded.no_padding()  # the file pads to 128; the embedder pads to its batch itself
    return loaded


@pytest.fixture(scope="module")
def wordpiece() -> WordPiece:
    return WordPiece(TOKENIZER_FILE, max_tokens=MAX_TOKENS)


def test_long_texts_are_cut_to_the_models_limit_and_framed() -> None:
    ids = WordPiece(TOKENIZER_FILE, max_tokens=MAX_TOKENS).ids("word " * 400)
    assert len(ids) == MAX_TOKENS
    assert (ids[0], ids[-1]) == (101, 102)  # [CLS] ... [SEP]
