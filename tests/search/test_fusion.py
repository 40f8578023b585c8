"""``recallstore._search.fusion.fuse``: each method's arithmetic, on hand-made rankings."""

from __future__ import annotations

import pytest

from recallstore._search.fusion import RRF_K, TIED_CREDIT, fuse


def test_zscore_fusion_adds_the_weighted_z_scores() -> None:
    keyword = [(3.0, "a"), (1.0, "b")]
    vector = [(0.9, "b"), (0.5, "c"), (0.1, "d")]
    fused = dict((key, score) for score, key in fuse(keyword, vector, 10, weight=0.5))
    assert fused["a"] == pytest.approx(0.5 * 1.0)
    assert fused["b"] == pytest.approx(0.5 * -1.0 + 0.5 * 1.2247, abs=1e-3)
    assert list(fused) == ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    "keyword",
    # 0.1 three times: a float mean that is not 0.1, a spread that is not 0.
    [[(2.5, "a")], [(0.1, "a"), (0.1, "x"), (0.1, "y")]],
    ids=["a lone match", "equal matches"],
)
def test_a_list_of_equal_scores_credits_each_as_its_best(
    keyword: list[tuple[float, str]],
) -> None:
    """Before, a lone keyword match (or equal ones) got the z-score 0, what a record
    matching no word gets: it ranked below a record nearer in meaning alone."""
    vector = [(0.9, "b"), (0.5, "a"), (0.1, "c")]
    fused = fuse(keyword, vector, 10, weight=0.35)
    scores = dict((key, score) for score, key in fused)
    assert scores["a"] == pytest.approx(0.65 * TIED_CREDIT)
    assert scores["b"] == pytest.approx(0.35 * 1.2247, abs=1e-3)
    assert fused[0][1] == "a"
    assert all(scores[key] == pytest.approx(0.65 * TIED_CREDIT) for _, key in keyword)


def test_score_fusion_divides_bm25_by_the_best_and_keeps_the_cosine() -> None:
    fused = fuse([(4.0, "a"), (2.0, "b")], [(0.6, "b")], 10, method="score", weight=0.5)
    assert [key for _, key in fused] == ["b", "a"]
    assert [score for score, _ in fused] == pytest.approx([0.55, 0.5])


def test_minmax_and_rrf_fusion() -> None:
    minmax = fuse([(4.0, "a"), (2.0, "b")], [(0.6, "c")], 10, method="minmax", weight=0.5)
    assert minmax == [(0.5, "a"), (0.5, "c"), (0.0, "b")]
    rrf = fuse([(4.0, "a")], [(0.6, "a"), (0.5, "b")], 1, method="rrf", weight=0.5)
    assert [key for _, key in rrf] == ["a"]
    assert rrf[0][0] == pytest.approx(1 / (RRF_K + 1))


def test_records_far_in_meaning_and_empty_inputs_take_no_part() -> None:
    assert fuse([], [(-0.2, "a"), (0.0, "b")], 10) == []
    assert fuse([(1.0, "a")], [], 0) == []
    assert fuse([(1.0, "a")], [(1.0, "a")], 5, method="score") == [(1.0, "a")]
